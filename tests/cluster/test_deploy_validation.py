"""deploy/k8s and deploy/compose.yaml checked by real validators, not only parsed.

- The Kubernetes manifests against the Kubernetes API's own OpenAPI schemas, as the API server
  would check them (kubernetes-validate, which carries the schemas of every release; strict: an
  unknown field is an error, as `kubectl apply --validate=strict` makes it).
- compose.yaml against the Compose Specification's JSON schema (check-jsonschema's vendored
  `vendor.compose-spec`). `docker compose config` would do more (interpolation, merging), but the
  docker CLI here has no compose plugin and there is no engine: the schema is what can run.
- CloudNativePG's `Cluster` (k8s/postgres.yaml) is a custom resource: its schema ships only in the
  operator's own release manifests and Helm chart, in no package registry, so it is skipped here
  (test_deploy_files.py checks the fields the deployment depends on). k8s/nats-values.yaml is
  Helm values for the NATS chart, not a manifest (test_deploy_files.py checks it too).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extras")
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is in the test extras")

from tests.cluster.nats_deploy import ROOT  # noqa: E402

K8S = ROOT / "deploy" / "k8s"
COMPOSE = ROOT / "deploy" / "compose.yaml"
KUBERNETES = "1.33.0"  # the oldest release the manifests are meant for (deploy/README.md)
CUSTOM_RESOURCES = {"postgresql.cnpg.io/v1": "CloudNativePG's CRD schema is in no package registry"}
NOT_MANIFESTS = {"nats-values.yaml"}  # Helm values


def manifests() -> list[tuple[str, int, dict]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name in NOT_MANIFESTS:
            continue
        for index, doc in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d is not None):
            found.append((path.name, index, doc))
    return found


@pytest.mark.parametrize(("name", "index", "doc"), manifests(),
                         ids=[f"{n}:{d.get('kind')}/{d.get('metadata', {}).get('name')}" for n, _, d in manifests()])
def test_every_kubernetes_manifest_is_valid_against_the_api_schema(name, index, doc):
    if doc.get("apiVersion") in CUSTOM_RESOURCES:
        pytest.skip(f"{name}: {doc['kind']} ({doc['apiVersion']}): {CUSTOM_RESOURCES[doc['apiVersion']]}")
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_kubernetes_validator_refuses_a_misspelt_or_mistyped_field():
    deployment = next(doc for _, _, doc in manifests() if doc["kind"] == "Deployment")
    misspelt = copy.deepcopy(deployment)
    misspelt["spec"]["replica"] = misspelt["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(misspelt, KUBERNETES, strict=True)
    mistyped = copy.deepcopy(deployment)
    mistyped["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(mistyped, KUBERNETES, strict=True)


def check_compose(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("check-jsonschema")), "--builtin-schema",
                           "vendor.compose-spec", str(path)], capture_output=True, text=True)


def test_compose_file_is_valid_against_the_compose_specification():
    done = check_compose(COMPOSE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_validator_refuses_an_unknown_service_key(tmp_path):
    compose = yaml.safe_load(COMPOSE.read_text())
    service = next(iter(compose["services"].values()))
    service["enviroment"] = service.pop("environment", {"A": "1"})
    bad = tmp_path / "compose.yaml"
    bad.write_text(yaml.safe_dump(compose))
    done = check_compose(bad)
    assert done.returncode == 1 and "enviroment" in done.stdout, done.stdout + done.stderr
