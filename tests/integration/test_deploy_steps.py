"""The documented deploy steps of issue 14, run as deploy/README.md says (not grepped for).

- `nats-server -c deploy/nats/single.conf` with the passwords in its environment, started
  from another directory: the `include "accounts.conf"` is found next to the file, and the
  accounts are in force.
- The PostgreSQL roles: an owner that is not a superuser but has CREATEROLE creates the
  database, runs `memoryctl migrate` and `psql -f deploy/postgres/worker_role.sql`; without
  CREATEROLE the same file fails, naming the privilege.
"""

from __future__ import annotations

import os
import subprocess
import sys

import asyncpg
import nats
import nats.errors
import pytest

from tests.cluster.nats_deploy import DEPLOY_NATS, NatsNode, connect_as, password_env
from tests.conftest import ROOT
from worker.embedded import PostgresServer, _nats_server_binary, _wait_for_port, free_port

WORKER_ROLE_SQL = ROOT / "deploy" / "postgres" / "worker_role.sql"


async def test_single_conf_includes_the_accounts_from_any_working_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    # The documented command; -p only moves it off the fixed port, and the store directory
    # (./.data/nats/js) is relative to the working directory, a temporary one.
    node = NatsNode("single-conf", DEPLOY_NATS / "single.conf", dict(os.environ, **password_env()), port,
                    tmp_path / "nats.log")
    node.proc = subprocess.Popen(
        [_nats_server_binary(), "-c",
         str(DEPLOY_NATS / "single.conf"), "-p", str(port), "-l", str(node.log)],
        cwd=elsewhere, env=node.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        _wait_for_port(port, node.proc, "nats-server", node.log, timeout=20.0)
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(node.url, connect_timeout=2, allow_reconnect=False)
        bot = await connect_as(node.url, "bot-tomori")
        assert bot.is_connected  # the user of accounts.conf, with its password from the environment
        await bot.close()
    finally:
        node.stop()


@pytest.fixture
def own_postgres(tmp_path):
    """A cluster of its own: roles are cluster-wide, and memory_worker must not exist yet."""
    server = PostgresServer(tmp_path / "pg", durable=False).start()
    yield server
    server.stop()


def psql(server: PostgresServer, dsn: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(server.bin_dir / "psql"), dsn, "-v", "ON_ERROR_STOP=1", *args],
                          capture_output=True, text=True, timeout=60)


async def test_worker_role_sql_runs_as_a_non_superuser_owner_with_createrole(own_postgres):
    admin = await asyncpg.connect(own_postgres.dsn())
    try:
        await admin.execute("CREATE ROLE memory_owner LOGIN NOSUPERUSER NOCREATEROLE")
        await admin.execute("CREATE DATABASE memory OWNER memory_owner")
    finally:
        await admin.close()
    owner_url = own_postgres.dsn("memory").replace(f"{own_postgres.user}@", "memory_owner@", 1)
    env = dict(os.environ, DATABASE_URL=owner_url, PYTHONPATH=str(ROOT))
    migrate = subprocess.run([sys.executable, "-m", "worker.cli", "migrate"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 0, migrate.stderr[-2000:]

    # Without CREATEROLE the file stops at creating the role, and says so.
    refused = psql(own_postgres, owner_url, "-f", str(WORKER_ROLE_SQL))
    assert refused.returncode != 0 and "permission denied to create role" in refused.stderr, refused.stderr

    admin = await asyncpg.connect(own_postgres.dsn())
    try:
        await admin.execute("ALTER ROLE memory_owner CREATEROLE")
    finally:
        await admin.close()
    applied = psql(own_postgres, owner_url, "-f", str(WORKER_ROLE_SQL))
    assert applied.returncode == 0, applied.stderr
    again = psql(own_postgres, owner_url, "-f", str(WORKER_ROLE_SQL))  # idempotent
    assert again.returncode == 0, again.stderr

    conn = await asyncpg.connect(owner_url)
    try:
        role = await conn.fetchrow("SELECT rolsuper, rolcreaterole, rolcanlogin FROM pg_roles "
                                   "WHERE rolname = 'memory_worker'")
        assert role is not None and tuple(role) == (False, False, True)
        assert await conn.fetchval("SELECT has_table_privilege('memory_worker', 'processed_commands', 'INSERT')")
        assert not await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = 'memory_owner'")
    finally:
        await conn.close()
