"""The TypeScript client, @memory-worker/client (clients/typescript), against the real worker.

Its tests are Node's own (`node --test`, clients/typescript/test/*.test.mjs); this runs them
inside the suite so they count, with the running worker's NATS and database, workspaces
prepared here, and what the tests that kill a worker or restart NATS need to start their own
(nats-server, the Python to run `memoryctl run`, a database of their own). The parity test
runs one scripted conversation (tests/e2e/conversation.py) through the Python MemoryClient
and, inside the node run, through the TypeScript one, and compares results and rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

import asyncpg
import pytest

from tests.conftest import ROOT, clone_database
from tests.e2e import conversation
from tests.e2e.bus import unique
from tests.e2e.directory import FAILING_INSERTS
from tests.support.directory import add_proxy_identity, add_server, add_user
from worker.client.memory_client import MemoryClient
from worker.local.embedded import _nats_server_binary

PACKAGE = ROOT / "clients" / "typescript"
TEST_FILES = ("shipping", "batches", "client", "cache_node", "kill", "shadowing")
TEST_TIMEOUT_MS = 120_000


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("Node.js (20 or later) is not installed: the TypeScript client's tests need it. "
                    "Install Node and npm, then run `make test` (it runs `npm ci` in clients/typescript).")
    if not (PACKAGE / "node_modules" / "@nats-io" / "jetstream").is_dir():
        pytest.fail("clients/typescript has no node_modules: run `make test` (or `npm ci` in clients/typescript).")
    return path


async def test_the_typescript_client_against_the_worker(e2e_worker, nats_server, bot_db, pg_server, template_db,
                                                        nc, tmp_path):
    # The parity conversation: the Python side here, the TypeScript side in client.test.mjs.
    python_world = await conversation.prepare_world(bot_db)
    typescript_world = await conversation.prepare_world(bot_db)
    async with MemoryClient(nc, timeout=30.0) as client:
        python_results = await conversation.run_python(client, conversation.script(python_world))
    assert [r["data"]["status"] for r in python_results] == [
        s["expect"] for s in conversation.script(python_world)]

    plain = [unique() for _ in range(6)]
    # shadowing.test.mjs's, where nothing else writes: its dry runs must see them untouched.
    shadow_workspaces = [unique() for _ in range(2)]
    for ws in plain + shadow_workspaces:
        await add_server(bot_db, ws)
    # The statuses the conversation leaves out: a host at full privacy acting for the identity
    # it hosts (host-protected), and inserts of 'permanent failure...' that fail in the database
    # (a create's db_error, a panel's failed).
    statuses = {"workspace": unique(), "host": unique(), "identity": f"pk:{uuid.uuid4()}"}
    await add_server(bot_db, statuses["workspace"])
    await add_user(bot_db, statuses["host"], privacy=2)
    await add_proxy_identity(bot_db, statuses["identity"], namespace_id=unique("ns-"), hosts=[statuses["host"]])
    await bot_db.execute(FAILING_INSERTS)
    # The kill test's worker has NATS and a database of its own.
    kill_database = await clone_database(pg_server, template_db)
    kill_workspaces = [unique() for _ in range(6)]
    conn = await asyncpg.connect(kill_database)
    try:
        for ws in kill_workspaces:
            await add_server(conn, ws)
    finally:
        await conn.close()

    fixture = tmp_path / "fixture.json"
    parity_out = tmp_path / "typescript-results.json"
    fixture.write_text(json.dumps({"conversation": conversation.script(typescript_world), "workspaces": plain,
                                   "shadow_workspaces": shadow_workspaces, "kill_workspaces": kill_workspaces,
                                   "statuses": statuses}))
    env = {**os.environ, "NATS_URL": nats_server.url, "DATABASE_URL": e2e_worker.env["DATABASE_URL"],
           "KILL_DATABASE_URL": kill_database, "MEMORY_FIXTURE": str(fixture), "PARITY_OUT": str(parity_out),
           "NATS_SERVER_BIN": _nats_server_binary(), "PYTHON": sys.executable, "REPO_ROOT": str(ROOT)}
    files = [f"test/{name}.test.mjs" for name in TEST_FILES]
    log = tmp_path / "node-test.log"
    with log.open("w") as out:
        # Each test bounded on its own, so a hang names the test that hung.
        # Two files at a time: the worker kill spends most of its time waiting for redelivery.
        done = subprocess.run([node(), "--test", "--test-reporter=spec", "--test-concurrency=2",
                               f"--test-timeout={TEST_TIMEOUT_MS}", *files],
                              cwd=PACKAGE, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, timeout=240)
    output = log.read_text()
    print(output)
    assert done.returncode == 0, f"node --test failed:\n{output[-15000:]}"

    # Parity: the same results and the same rows, once ids are named by their role.
    typescript_results = json.loads(parity_out.read_text())
    python_names, typescript_names = conversation.Normaliser(python_world), conversation.Normaliser(typescript_world)
    assert (typescript_names.results(typescript_results, conversation.script(typescript_world))
            == python_names.results(python_results, conversation.script(python_world)))
    assert (await conversation.rows(bot_db, typescript_world, typescript_names)
            == await conversation.rows(bot_db, python_world, python_names))


def test_the_node_tests_are_all_run():
    """Every test file of the package is in TEST_FILES (a new one is not silently skipped)."""
    present = sorted(p.name.removesuffix(".test.mjs") for p in (PACKAGE / "test").glob("*.test.mjs"))
    assert present == sorted(TEST_FILES)
    # test/accounts/ needs the secured server: tests/integration/test_nats_permissions.py runs it.
    assert [p.name for p in (PACKAGE / "test" / "accounts").glob("*.test.mjs")] == ["shipped_accounts.test.mjs"]
