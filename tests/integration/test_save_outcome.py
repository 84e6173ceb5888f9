"""The outcomes of a save are one set of labels in Python and in SQL (worker/kinds/create/outcome.py's
SaveOutcome, db/migrations/002_save_outcome.sql). So are the privacy levels (Privacy): the
schema's CHECK and what the locked save reads. A create's op carries its decision, nothing
rendered; memory_create_batch() stores it with what the save learned under the lock
(processed_commands.decision and .facts, db/migrations/009_decisions.sql), in the one
statement, whether the save wrote or ended writing nothing, and every answer is rendered from
that row (worker/services/stored.py)."""

from __future__ import annotations

import re

import msgspec
import pytest

from contracts import subjects
from contracts.codec import RESULT_DECODER, encode
from contracts.kinds.create import LIMIT_EXCEEDED, PRIVACY_RESTRICTED, SAVED
from db.inbox import BatchRow
from db.repository import MemoryRepository
from db.requests import CreateBatchRequest, CreateOp
from db.transaction import lock_order
from tests.support.directory import add_server, add_user
from tests.support.planned import planned_batch
from worker.domain.people import Privacy
from worker.domain.workspace import Limits
from worker.kinds.create.outcome import SaveOutcome
from worker.kinds.create.record import SavePlan, SaveSettled
from worker.kinds.create.service import CreateMemoryService
from worker.services.stored import answer, published_events

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, add_server_memories, personal_save, server_save


async def test_the_sql_enum_has_exactly_the_python_outcomes_in_order(pool):
    labels = await pool.fetchval("SELECT enum_range(NULL::memory_worker.save_outcome)::text[]")
    assert labels == [outcome.value for outcome in SaveOutcome]


async def _planned(pool, cmd) -> CreateOp:
    """The op the worker sends for `cmd` after its real context read."""
    (op,) = (await planned_batch(pool, [cmd])).ops
    assert isinstance(op.decision, SavePlan), op.decision
    return op


async def _store(repo: MemoryRepository, op: CreateOp) -> BatchRow:
    """memory_create_batch() with the one op: one statement, one transaction."""
    assert op.owner is not None
    (row,) = await repo.create_batch(CreateBatchRequest(lock_order([op.owner]), [op]))
    return row


async def _columns(pool, command_id: str) -> dict:
    row = await pool.fetchrow("SELECT status, result::text, events::text, decision::text, facts::text"
                              " FROM processed_commands WHERE command_id = $1", command_id)
    return dict(row) if row is not None else {}


@pytest.mark.parametrize("decay", [False, True])
async def test_a_create_op_carries_its_decision_and_nothing_rendered(pool, decay):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=decay)
    op = await _planned(pool, server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL))

    sent = msgspec.json.decode(encode(op))

    assert set(sent) == {"command_id", "workspace_id", "decision", "applied_by"}
    assert sent["decision"]["decided"] == "save" and sent["decision"]["content"] == "a fact"
    # The metric id of an eviction's events is chosen before the save, exactly when it may evict.
    assert (sent["decision"]["metric_event_id"] is not None) is decay
    assert not {"result", "status", "events", "facts"} & set(sent["decision"])
    assert len(encode(op)) < 1500


async def test_a_plain_save_stores_its_decision_and_new_id_and_answers_repeats_byte_for_byte(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    cmd = server_save(ws, 'says "memory_id":0 and 0')
    op = await _planned(pool, cmd)
    repo = MemoryRepository(pool)

    row = await _store(repo, op)

    assert not row.duplicate
    assert row.stored.decision == op.decision  # stored as sent
    assert row.stored.facts is not None and row.stored.facts.outcome == SaveOutcome.SAVED
    columns = await _columns(pool, cmd.command_id)
    assert (columns["status"], columns["result"], columns["events"]) == (None, None, None)
    assert msgspec.json.decode(columns["facts"]) == {"outcome": "saved", "memory_id": row.stored.facts.memory_id}
    first = answer(row.stored)
    result = RESULT_DECODER.decode(first.result)
    assert (result.data.status, result.data.memory_id) == (SAVED, row.stored.facts.memory_id)
    assert result.data.content_saved == 'says "memory_id":0 and 0'
    looked_up = await repo.stored_command(cmd.command_id, ws)
    assert looked_up is not None and answer(looked_up).result == first.result  # the result lookup's answer
    repeat = await CreateMemoryService(repo, Limits()).run(cmd)
    assert repeat.duplicate and repeat.answer.result == first.result  # the repeat's answer
    assert [e.subject for e in published_events(row.stored)] == [
        f"cache.invalidate.tomori_state.{ws}", f"memory.saved.server.{ws}"]


async def _server_at_cap(pool, *, decay: bool, age_days: float) -> tuple[str, int]:
    """A workspace with decay on or off whose server memories (lineage 7) fill the cap of 100."""
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=decay)
        await add_server_memories(conn, server_id, 7, [age_days] * 100)
    return ws, server_id


async def test_an_evicting_save_stores_the_forgotten_row_for_its_answer_and_events(pool):
    ws, server_id = await _server_at_cap(pool, decay=True, age_days=90)
    cmd = server_save(ws, "replaces one", retrieval=GOOD_RETRIEVAL)
    op = await _planned(pool, cmd)
    async with pool.acquire() as conn:
        oldest = await conn.fetchval("SELECT min(server_memory_id) FROM server_memories WHERE server_id = $1",
                                     server_id)

    row = await _store(MemoryRepository(pool), op)

    facts = row.stored.facts
    assert facts == SaveSettled(SaveOutcome.SAVED_WITH_EVICTION, memory_id=facts.memory_id if facts else None,
                              evicted_id=oldest, forgotten="old #0")
    result = RESULT_DECODER.decode(answer(row.stored).result)
    assert result.data.content_forgotten == "old #0" and "forgotten" in result.notice["title"]
    events = published_events(row.stored)
    assert events[-1].subject == subjects.METRIC_EVICTION_SUBJECT
    assert events[-1].headers["Nats-Msg-Id"] == op.decision.metric_event_id
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_memory_id = $1", oldest) == 0


class _CountingRepository(MemoryRepository):
    """Keeps every batch it sends (the list is shared with its sessions, which are shallow copies)."""

    def __init__(self, pool) -> None:
        super().__init__(pool)
        self.sent: list[CreateBatchRequest] = []

    async def create_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        self.sent.append(batch)
        return await super().create_batch(batch)


@pytest.mark.parametrize("decay", [False, True])
async def test_a_save_that_writes_nothing_is_stored_by_the_same_statement_with_the_count_it_read(pool, decay):
    """At the cap with nothing eligible (decay off; or on, every row recent): the statement that
    found no room stores the create's decision and the outcome and count it read, no memory row;
    nothing more is sent (no second statement to store a refusal)."""
    ws, server_id = await _server_at_cap(pool, decay=decay, age_days=1)
    cmd = server_save(ws, "no room", retrieval=GOOD_RETRIEVAL)
    repo = _CountingRepository(pool)

    handled = await CreateMemoryService(repo, Limits()).run(cmd)

    assert len(repo.sent) == 1
    stored = await repo.stored_command(cmd.command_id, ws)
    assert stored is not None and stored.facts == SaveSettled(SaveOutcome.AT_CAP, count=100)
    assert isinstance(stored.decision, SavePlan) and (stored.status, stored.result, stored.events) == (None, None, None)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 100
    result = RESULT_DECODER.decode(handled.answer.result)
    assert (result.data.status, result.data.current_count) == (LIMIT_EXCEEDED, 100)
    assert answer(stored).result == handled.answer.result and handled.events == [] == published_events(stored)


async def test_the_schema_allows_exactly_the_python_privacy_levels(pool):
    check = await pool.fetchval(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_attribute a"
        " ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)"
        " WHERE c.conrelid = 'public.users'::regclass AND c.contype = 'c' AND a.attname = 'privacy_level'")
    assert sorted(int(level) for level in re.findall(r"\d+", check)) == [level.value for level in Privacy]


SAVE_BY_LEVEL = {Privacy.OPEN: SaveOutcome.SAVED, Privacy.PARTIAL: SaveOutcome.PRIVACY_PARTIAL,
                 Privacy.FULL: SaveOutcome.PRIVACY_FULL}


@pytest.mark.parametrize("level", list(Privacy))
async def test_the_locked_save_reads_each_privacy_level_as_python_names_it(pool, level):
    """The level changes between the context read (open) and the save: the SQL's reading of it
    picks the outcome Python names for that level, stored with the decision either way."""
    assert SAVE_BY_LEVEL.keys() == set(Privacy)
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, user)
    cmd = personal_save(ws, user, "Mika", "{user} likes tea")
    op = await _planned(pool, cmd)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE users SET privacy_level = $2 WHERE user_disc_id = $1", user, int(level))

    row = await _store(MemoryRepository(pool), op)

    assert row.stored.facts is not None and row.stored.facts.outcome == SAVE_BY_LEVEL[level]
    result = RESULT_DECODER.decode(answer(row.stored).result)
    saved = await pool.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", user_id)
    if level is Privacy.OPEN:
        assert (result.data.status, saved) == (SAVED, 1)
    else:
        assert (result.data.status, saved, published_events(row.stored)) == (PRIVACY_RESTRICTED, 0, [])
        assert result.error == "Cannot save personal memory: Mika has privacy restrictions."
