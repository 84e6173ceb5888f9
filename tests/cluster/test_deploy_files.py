"""deploy/: every file parses, and the invariants the manifests depend on hold (issue 7).

Docker and Kubernetes are not available here, so nothing is deployed: the YAML and JSON files
are parsed, the NATS configurations are checked by nats-server itself (`-t`), and the values
that must agree across files (passwords, replicas, ports, probe paths, labels) are compared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extras")

from tests.cluster.nats_deploy import PASSWORD_VARS, ROOT  # noqa: E402
from worker.local.embedded import _nats_server_binary  # noqa: E402
from worker.shared.settings import Settings  # noqa: E402

DEPLOY = ROOT / "deploy"
# accounts.conf and the files it includes: the permissions of each role, the further bots' accounts.
ACCOUNT_FILES = [DEPLOY / "nats" / "accounts.conf", *sorted((DEPLOY / "nats").glob("permissions-*.conf")),
                 *sorted((DEPLOY / "nats").glob("tenant-*.conf"))]
ACCOUNTS = "\n".join(path.read_text() for path in ACCOUNT_FILES)


def load_all(path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def one(docs: list[dict], kind: str) -> dict:
    found = [d for d in docs if d.get("kind") == kind]
    assert len(found) == 1, f"want one {kind}, got {len(found)}"
    return found[0]


def password_vars_of_accounts() -> set[str]:
    return set(re.findall(r"password:\s*\$(\w+)", ACCOUNTS))


def plain_env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


# --------------------------------------------------------------------------------------------
# Everything parses


@pytest.mark.parametrize("path", sorted(p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*.y*ml")))
def test_yaml_parses(path):
    assert load_all(DEPLOY / path)


@pytest.mark.parametrize("path", sorted(p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*.json")))
def test_json_parses(path):
    json.loads((DEPLOY / path).read_text())


def nats_env(**over: str) -> dict[str, str]:
    env = dict(os.environ, NATS_SERVER_NAME="n1", NATS_LISTEN="127.0.0.1:4222", NATS_HTTP_LISTEN="127.0.0.1:8222",
               NATS_CLUSTER_LISTEN="127.0.0.1:6222",
               NATS_ROUTES='["nats://127.0.0.1:6222", "nats://127.0.0.1:6223", "nats://127.0.0.1:6224"]',
               NATS_STORE_DIR="/tmp/unused")
    env.update({var: "x" for var in password_vars_of_accounts()})
    env.update(over)
    return env


def test_nats_server_accepts_the_cluster_configuration():
    check = subprocess.run([_nats_server_binary(), "-t", "-c", str(DEPLOY / "nats" / "cluster.conf")],
                           env=nats_env(), capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr + check.stdout


def test_nats_server_refuses_the_cluster_configuration_without_a_password():
    env = nats_env()
    del env["NATS_WORKER_PASSWORD"]
    check = subprocess.run([_nats_server_binary(), "-t", "-c", str(DEPLOY / "nats" / "cluster.conf")],
                           env=env, capture_output=True, text=True, timeout=30)
    assert check.returncode != 0 and "NATS_WORKER_PASSWORD" in check.stderr + check.stdout


def test_cluster_conf_syncs_every_write_and_forms_a_named_cluster():
    text = (DEPLOY / "nats" / "cluster.conf").read_text()
    assert re.search(r"^\s*sync_interval:\s*always\s*$", text, re.M)
    assert re.search(r"^\s*routes:\s*\$NATS_ROUTES\s*$", text, re.M)
    assert 'include "accounts.conf"' in text


# --------------------------------------------------------------------------------------------
# Accounts


def test_every_account_password_is_provided_everywhere():
    wanted = password_vars_of_accounts()
    assert wanted == set(PASSWORD_VARS.values())
    values = yaml.safe_load((DEPLOY / "k8s" / "nats-values.yaml").read_text())
    assert set(values["container"]["env"]) == wanted
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name in ("nats-a", "nats-b", "nats-c"):
        assert wanted <= set(compose["services"][name]["environment"])
    example = dict(line.split("=", 1) for line in (DEPLOY / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert wanted <= set(example)


def test_nobody_gets_wildcard_access():
    rules = re.sub(r"#.*", "", ACCOUNTS)  # subjects never contain '#'
    # Only the worker reads every inbox; nobody gets the whole JetStream API, nobody gets `>`.
    assert rules.count('"_INBOX.>"') == 1 and '"$JS.API.>"' not in rules
    assert '">"' not in rules
    # Consumers are created with their filter in the subject, never through DURABLE.CREATE.
    assert "DURABLE.CREATE" not in rules


def permission_list(path, direction: str, kind: str) -> list[str]:
    """The subjects of `direction { kind: [...] }` in a permissions file (comments dropped)."""
    text = re.sub(r"#.*", "", path.read_text())
    block = re.search(rf"{direction}:\s*{{([^{{}}]*)}}", text)
    assert block, f"no {direction} block in {path.name}"
    found = re.search(rf"{kind}:\s*\[(.*?)\]", block.group(1), re.S)
    return re.findall(r'"([^"]+)"', found.group(1)) if found else []


DESTROYING = ["$JS.API.STREAM.DELETE.>", "$JS.API.CONSUMER.DELETE.>", "$JS.API.STREAM.PURGE.MEMORY_EVENTS",
              "$JS.API.STREAM.PURGE.MEMORY_DLQ", "$JS.API.STREAM.MSG.DELETE.MEMORY_EVENTS",
              "$JS.API.STREAM.MSG.DELETE.MEMORY_DLQ"]


def test_the_worker_holds_no_right_to_destroy_and_exact_jetstream_subjects_only():
    """Issue 35: what a bot could make the worker publish must not delete or empty anything. The
    real server refuses them too (tests/integration/test_nats_permissions.py)."""
    worker = DEPLOY / "nats" / "permissions-worker.conf"
    allow, deny = permission_list(worker, "publish", "allow"), permission_list(worker, "publish", "deny")
    assert set(DESTROYING) <= set(deny)
    api = [s for s in allow if s.startswith("$JS.API.")]
    assert api and all(".DELETE." not in s or s == "$JS.API.STREAM.MSG.DELETE.MEMORY_COMMANDS" for s in api)
    assert [s for s in api if ".PURGE." in s] == ["$JS.API.STREAM.PURGE.MEMORY_COMMANDS"]
    # Each names its stream: no verb on every stream, no `>` in the API but a consumer's filter.
    for subject in api:
        verb_and_stream = subject.removeprefix("$JS.API.").split(".")
        assert any(t.startswith("MEMORY_") for t in verb_and_stream), subject
        assert ">" not in subject or ".memory." in subject, subject
    assert "_memory_upgrade.>" not in allow  # the rebuild is the provisioning user's
    assert {"dlq.memory.>", "_INBOX.bot.>"} <= set(allow) and "dlq.>" not in allow


def test_every_account_has_one_provisioning_user_and_it_answers_nobody():
    rules = re.sub(r"#.*", "", ACCOUNTS)
    assert rules.count('include "permissions-admin.conf"') == rules.count("jetstream: enabled") == 2
    admin = DEPLOY / "nats" / "permissions-admin.conf"
    allow = permission_list(admin, "publish", "allow")
    assert not [s for s in allow if s.startswith(("memory.", "cache.", "metrics.", "_INBOX."))]
    assert permission_list(admin, "subscribe", "allow") == ["_INBOX.admin.>"]


def test_every_included_file_is_included_and_every_bot_has_an_account_of_its_own():
    included = set(re.findall(r'^\s*(?:[^#\n]*\s)?include "([^"]+)"', ACCOUNTS, re.M))
    assert included == {path.name for path in ACCOUNT_FILES[1:]}
    rules = re.sub(r"#.*", "", ACCOUNTS)
    bots = re.findall(r"user: (bot-[a-z0-9-]+)", rules)
    assert bots == ["bot-tomori", "bot-kaede"]
    for bot in bots:
        # A bot never deletes (nor so re-creates as push) the pull consumers its worker made for it.
        assert f"CONSUMER.DELETE.MEMORY_EVENTS.{bot}" not in rules
    # Every account has exactly one worker, with the shared worker permissions.
    assert rules.count('include "permissions-worker.conf"') == rules.count("jetstream: enabled") == 2


# --------------------------------------------------------------------------------------------
# Kubernetes


@pytest.fixture(scope="module")
def worker_docs() -> list[dict]:
    return load_all(DEPLOY / "k8s" / "worker.yaml")


def test_worker_deployment(worker_docs):
    deployment = one(worker_docs, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    env = plain_env(container)
    assert spec["replicas"] >= 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()

    # Probes on /healthz at METRICS_PORT, listening on every interface.
    assert env["METRICS_HOST"] == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        http = container[probe]["httpGet"]
        assert http["path"] == "/healthz"
        assert ports.get(http["port"], http["port"]) == int(env["METRICS_PORT"])

    # Secrets, not values, for the database URL and the NATS credentials.
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
    assert {"DATABASE_URL", "NATS_USER", "NATS_PASSWORD"} <= set(secret_env)
    assert not {"DATABASE_URL", "NATS_USER", "NATS_PASSWORD"} & set(env)

    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    assert env["STREAM_REPLICAS"] == "3"
    assert len(env["NATS_URL"].split(",")) == 3
    # Tomori's account: its bot's inbox only, its tenant (deploy/README.md, "Bots apart").
    assert env["REPLY_SUBJECT_PREFIXES"] == "_INBOX.bot.tomori." and env["TENANT"] == "tomori"
    assert pod["terminationGracePeriodSeconds"] > int(env["ACK_WAIT_SECONDS"])

    # The plain values are valid settings for the worker.
    settings = Settings.from_env({**env, "DATABASE_URL": "postgresql://x@y/z", "NATS_USER": "memory-worker",
                                  "NATS_PASSWORD": "x"})
    assert (settings.stream_replicas, settings.metrics_host) == (3, "0.0.0.0")
    assert settings.tenant == "tomori" and settings.tenant_lineages


# What `memoryctl provision` reads of a worker's settings: the provisioning Job has the Deployment's.
PROVISION_SETTINGS = ("NATS_URL", "STREAM_REPLICAS", "MEMORY_PARTITIONS", "ACK_WAIT_SECONDS", "TENANT",
                      "TENANT_LINEAGES", "PARTITION_IN_FLIGHT", "COMMAND_MAX_AGE_HOURS", "COMMAND_MAX_MIB")


def test_the_provision_job_provisions_the_workers_account_as_its_provisioning_user(worker_docs):
    (worker,) = one(worker_docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    job = one(load_all(DEPLOY / "k8s" / "provision-job.yaml"), "Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["provision"] and container["image"] == worker["image"]
    env, worker_env = plain_env(container), plain_env(worker)
    assert {k: env.get(k) for k in PROVISION_SETTINGS} == {k: worker_env.get(k) for k in PROVISION_SETTINGS}
    assert env["NATS_INBOX_PREFIX"] == "_INBOX.admin"
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
    assert {ref["name"] for ref in secret_env.values()} == {"memory-provision"}
    assert set(secret_env) == {"NATS_USER", "NATS_PASSWORD"}
    settings = Settings.from_env({**env, "NATS_USER": "memory-admin", "NATS_PASSWORD": "x"})
    assert settings.tenant == "tomori" and settings.nats_auth.inbox_prefix == "_INBOX.admin"


def test_pod_disruption_budget_keeps_a_worker(worker_docs):
    deployment = one(worker_docs, "Deployment")
    pdb = one(worker_docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert 1 <= pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]


def test_nats_helm_values_make_a_three_node_jetstream_cluster():
    values = yaml.safe_load((DEPLOY / "k8s" / "nats-values.yaml").read_text())
    config = values["config"]
    assert config["cluster"]["enabled"] and config["cluster"]["replicas"] == 3
    assert config["jetstream"]["enabled"] and config["jetstream"]["fileStore"]["pvc"]["enabled"]
    assert config["jetstream"]["merge"]["sync_interval"] == "always"
    assert "accounts.conf" in config["merge"].values()
    assert values["podDisruptionBudget"]["enabled"]


def test_cloudnativepg_cluster():
    cluster = one(load_all(DEPLOY / "k8s" / "postgres.yaml"), "Cluster")
    assert cluster["apiVersion"].startswith("postgresql.cnpg.io/")
    spec = cluster["spec"]
    assert spec["instances"] == 3
    assert spec["postgresql"]["synchronous"]["number"] >= 1
    # Zero loss on failover (tests/faults failover-*): commits wait for a standby, never fall back.
    assert spec["postgresql"]["synchronous"]["dataDurability"] == "required"
    assert spec["bootstrap"]["initdb"]["owner"] != "memory_worker"
    (role,) = [r for r in spec["managed"]["roles"] if r["name"] == "memory_worker"]
    assert role["login"] and not role["superuser"] and not role["createrole"] and not role["createdb"]
    assert "pg_monitor" in role["inRoles"]  # the worker's replication check sees sync_state


def test_migration_job_runs_as_the_owner_and_applies_the_worker_role():
    job = one(load_all(DEPLOY / "k8s" / "migrate-job.yaml"), "Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    script = "\n".join(container["args"])
    assert "memoryctl migrate" in script and "/app/deploy/postgres/worker_role.sql" in script
    (url,) = [e for e in container["env"] if e["name"] == "DATABASE_URL"]
    assert url["valueFrom"]["secretKeyRef"] == {"name": "memory-db-app", "key": "uri"}
    assert "COPY deploy/postgres /app/deploy/postgres" in (DEPLOY / "Dockerfile").read_text()


# --------------------------------------------------------------------------------------------
# Compose


def test_compose_runs_three_nats_nodes_postgres_and_the_workers_of_each_account():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    nats = ["nats-a", "nats-b", "nats-c"]
    routes = json.loads(services["nats-a"]["environment"]["NATS_ROUTES"])
    assert routes == [f"nats://{n}:6222" for n in nats]
    names = {services[n]["environment"]["NATS_SERVER_NAME"] for n in nats}
    assert names == set(nats)
    for n in nats:
        assert services[n]["command"] == ["-c", "/etc/nats/cluster.conf"]
        assert any(v.startswith(f"{n}:") for v in services[n]["volumes"])  # a store of its own
    workers = [name for name, s in services.items() if s.get("command") == ["run"]]
    by_tenant: dict[str, list[str]] = {}
    for name in workers:
        env = services[name]["environment"]
        by_tenant.setdefault(env["TENANT"], []).append(name)
        assert env["NATS_URL"] == ",".join(f"nats://{n}:4222" for n in nats)
        assert env["STREAM_REPLICAS"] == "3"
        # Each account's worker: its own user, its bot's inbox, its lineages (deploy/README.md, "Bots apart").
        user = "memory-worker" if env["TENANT"] == "tomori" else f"memory-worker-{env['TENANT']}"
        assert env["NATS_USER"] == user and f"user: {user}," in ACCOUNTS
        assert env["REPLY_SUBJECT_PREFIXES"] == f"_INBOX.bot.{env['TENANT']}."
        assert Settings.from_env({**env, "NATS_PASSWORD": "x"}).tenant_lineages
        assert env["DATABASE_URL"].startswith("postgresql://memory_worker:")
        assert services[name]["depends_on"]["db-setup"]["condition"] == "service_completed_successfully"
        # Its account provisioned first, by the account's provisioning user, with the same settings.
        provision = "provision" if env["TENANT"] == "tomori" else f"provision-{env['TENANT']}"
        assert services[name]["depends_on"][provision]["condition"] == "service_completed_successfully"
        provisioning = services[provision]["environment"]
        assert services[provision]["command"] == ["provision"]
        assert provisioning["NATS_USER"] == user.replace("memory-worker", "memory-admin")
        assert provisioning["NATS_INBOX_PREFIX"] == "_INBOX.admin"
        assert {k: provisioning.get(k) for k in PROVISION_SETTINGS} == {k: env.get(k) for k in PROVISION_SETTINGS}
        assert services[name]["build"]["dockerfile"] == "deploy/Dockerfile"
    # Every bot of accounts.conf has a worker; Tomori's two.
    assert {t: len(names) for t, names in by_tenant.items()} == {"tomori": 2, "kaede": 1}
    assert len({services[name]["ports"][0] for name in workers}) == 3
    assert "postgres" in services and services["migrate"]["command"] == ["migrate"]


def test_dockerfile_runs_memoryctl_as_a_non_root_user():
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["memoryctl"\]$', text, re.M)
    assert re.search(r"^USER 10001$", text, re.M)
