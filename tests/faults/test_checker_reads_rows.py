"""The checker (tests/faults/checker.py) reads what a create was answered from its inbox row
without the worker's code: its decision and facts, or the result a row keeps. Here its reading
is held to the worker's own answers on real PostgreSQL, for each way a create can end, and a
changed answer is one it does not take for the stored one. (The planted breaks of a whole
fault run: tests/faults/sabotage.py, run by test_faults.py.)"""

from __future__ import annotations

import json

import msgspec
import pytest

from contracts.kinds.create import INVALID_ARGS, LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from db.repository import MemoryRepository
from tests.faults.checker import SEARCH_PATH, stored_commands
from tests.integration.helpers import GOOD_RETRIEVAL, add_server_memories, server_save
from tests.support.directory import add_server
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService

from ..conftest import unique

LIMITS = Limits(max_server_memories=3)


async def _rows(pool) -> dict:
    async with pool.acquire() as conn:
        await conn.execute(f"SET search_path = {SEARCH_PATH}")
        return await stored_commands(conn)


@pytest.mark.parametrize(("case", "status"), [
    ("below the cap", SAVED),
    ("at the cap, a dormant row replaced", SAVED_WITH_EVICTION),
    ("at the cap, decay off", LIMIT_EXCEEDED),
    ("over the cap", LIMIT_EXCEEDED),
    ("refused before the save", INVALID_ARGS),
])
async def test_the_checker_reads_a_create_row_as_the_worker_answered_it(pool, case, status):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=case != "at the cap, decay off")
        rows = {"below the cap": 1, "over the cap": 4}.get(case, 3)
        await add_server_memories(conn, server_id, 7, [90.0] * rows)
    cmd = server_save(ws, "" if case == "refused before the save" else f"{case}: a fact", retrieval=GOOD_RETRIEVAL)

    handled = await CreateMemoryService(MemoryRepository(pool), LIMITS).run(cmd)

    sent = json.loads(handled.answer.result)
    assert sent["data"]["status"] == status, sent
    stored, _ = (await _rows(pool))[cmd.command_id]
    assert stored.answers(handled.answer.result)
    if status in (SAVED, SAVED_WITH_EVICTION):
        assert (stored.status, stored.memory_id) == (status, sent["data"]["memory_id"])
        assert list(stored.invalidated) == [(k["cache"], k["key"]) for k in sent["invalidated"]]
        other = {**sent, "data": {**sent["data"], "memory_id": sent["data"]["memory_id"] + 1}}
        assert not stored.answers(json.dumps(other).encode())
    elif status == LIMIT_EXCEEDED:
        assert (stored.status, stored.memory_id, stored.invalidated) == (status, None, ())
        saved = {**sent, "data": {**sent["data"], "status": SAVED}}
        assert not stored.answers(json.dumps(saved).encode())
    else:  # an unexpected status for the fault runs' commands ("unexpected status" names it)
        assert stored.status not in (SAVED, SAVED_WITH_EVICTION, LIMIT_EXCEEDED)
        claimed = {**sent, "success": True, "data": {**sent["data"], "status": SAVED, "memory_id": 1}}
        assert not stored.answers(json.dumps(claimed).encode())


async def test_a_row_that_keeps_its_result_is_compared_byte_for_byte(pool):
    cid, ws = unique("c-"), unique()
    result = msgspec.json.encode({"command_id": cid, "success": True,
                                  "data": {"status": SAVED, "memory_id": 5}})
    await pool.execute("INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)"
                       " VALUES ($1, 'create', $2, $3, $4::json)", cid, ws, SAVED, result.decode())

    stored, _ = (await _rows(pool))[cid]

    assert (stored.status, stored.memory_id) == (SAVED, 5)
    assert stored.answers(result)
    assert not stored.answers(json.dumps(json.loads(result), indent=1).encode())  # same JSON, other bytes
