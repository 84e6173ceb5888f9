"""A JavaScript bot written from contracts/ alone drives the running worker (tests/interop/
bot.mjs, nats.js + @asyncapi/parser + Ajv), and the TypeScript declarations under
contracts/types are what json-schema-to-typescript makes of the schemas today, and compile.

Node is part of the suite: `make test` installs tests/interop's locked packages (npm ci). A
machine without Node fails here, saying so, rather than passing without the check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.bus import unique
from tests.e2e.directory import add_old_server_memories, server_memories
from tests.support.directory import add_server

INTEROP = Path(__file__).resolve().parent.parent / "interop"
LINEAGE = 21


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("Node.js (20 or later) is not installed: the interop test runs a JavaScript bot. "
                    "Install Node and npm, then run `make test` (it runs `npm ci` in tests/interop).")
    if not (INTEROP / "node_modules" / "@asyncapi" / "parser").is_dir():
        pytest.fail("tests/interop has no node_modules: run `make test` (or `npm ci` in tests/interop).")
    return path


def run_node(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([node(), *args], cwd=INTEROP, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_the_typescript_declarations_are_current_and_type_check():
    done = run_node("generate-types.mjs", "--check")
    assert done.returncode == 0, done.stderr or done.stdout
    # A bot's use of them (tests/interop/uses-types.ts) compiles under --strict.
    done = run_node("node_modules/typescript/bin/tsc", "--noEmit", "--strict", "uses-types.ts")
    assert done.returncode == 0, done.stdout + done.stderr


async def test_a_javascript_bot_from_the_contract_alone(e2e_worker, nats_server, bot_db):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True)
    # One below the cap of 5: the panel's add fills it, the bot's create then evicts a dormant row.
    await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"dormant {i}", 60) for i in range(4)])

    done = run_node("bot.mjs", env={"NATS_URL": nats_server.url, "WORKSPACE_ID": ws, "LINEAGE": str(LINEAGE)})
    lines = done.stdout.strip().splitlines()
    assert lines, f"the bot printed nothing; stderr:\n{done.stderr}"
    summary = json.loads(lines[-1])
    assert summary["failures"] == [], summary["failures"]
    assert done.returncode == 0, done.stderr

    # @asyncapi/parser: no diagnostics at all (errors are severity 0, warnings 1, infos 2, hints 3).
    assert summary["diagnostics"] == []
    # Ajv (2020-12, strict, formats) saw and accepted every kind of payload the bot met.
    assert set(summary["validated"]) >= {
        "CreateMemory", "ManualMemory", "CommandResult", "ManualResult", "StoredResult", "CommandOutcome",
        "MemorySaved", "MemoryEvicted", "MemoryRemoved", "CacheInvalidate", "MemoryEvictionMetric"}

    # Three sends of one create (once, an exact repeat, a new message id) made one memory.
    rows = await server_memories(bot_db, ws, LINEAGE)
    assert [r["content"] for r in rows if r["content"] == "{user} likes green tea"] == ["{user} likes green tea"]
    assert summary["created_memory_id"] in {r["id"] for r in rows}
    count = await bot_db.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1"
                                  " AND facts ->> 'outcome' = 'saved_with_eviction'", summary["command_id"])
    assert count == 1
