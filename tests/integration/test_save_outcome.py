"""The outcomes of a save are one set of labels in Python and in SQL (worker/domain/outcome.py,
db/migrations/002_save_outcome.sql). So are the privacy levels (worker/domain/model.py's
Privacy): the schema's CHECK and what the locked save reads. A request carries only what its
save stores when it writes (db/migrations/007_compact_save.sql): a save that writes stores the
result as the worker encoded it, with the new id (and after an eviction the forgotten row and
the facts its events need); one that writes nothing stores nothing and reports its count."""

from __future__ import annotations

import re

import msgspec
import pytest

from contracts.codec import RESULT_DECODER, encode
from contracts.results import SAVED
from db.repository import MemoryRepository
from tests.support.directory import add_server, add_user
from worker.domain import messages
from worker.domain.arguments import parse_tool_args
from worker.domain.model import Limits, Privacy, SaveOutcome
from worker.domain.outcome import SQL_TYPE
from worker.domain.targets import lookup_ids
from worker.services.base import Handled
from worker.services.create_memory import CreateMemoryService, Refusal, Save

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, add_server_memories, personal_save, server_save


async def test_the_sql_enum_has_exactly_the_python_outcomes_in_order(pool):
    labels = await pool.fetchval(f"SELECT enum_range(NULL::{SQL_TYPE})::text[]")
    assert labels == [outcome.value for outcome in SaveOutcome]


async def _step(pool, cmd) -> tuple[MemoryRepository, CreateMemoryService, Save]:
    """The save the service plans for `cmd` after its real context read."""
    repo = MemoryRepository(pool)
    service = CreateMemoryService(repo, Limits())
    args = parse_tool_args(cmd.tool_args)
    step = service.step(cmd, args, await repo.create_context(cmd.command_id, cmd.workspace_id,
                                                             list(lookup_ids(cmd, args)), 7))
    assert isinstance(step, Save), step
    return repo, service, step


@pytest.mark.parametrize("decay", [False, True])
async def test_a_save_request_carries_only_what_its_save_stores_when_it_writes(pool, decay):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=decay)
    _, _, step = await _step(pool, server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL))

    request = msgspec.json.decode(encode(step.request))

    # The plain save's result cut at its id; the eviction's only when the plan may evict; no
    # result of an outcome that writes nothing, no events.
    assert set(request) >= {"result", "status", "facts"} and len(request["result"]) == 2
    assert (request["eviction"] is not None) is decay
    assert "results" not in request and "events" not in request
    assert len(encode(step.request)) < (3000 if decay else 1500)


async def test_a_plain_saves_result_is_stored_as_encoded_with_its_new_id_and_answers_repeats_byte_for_byte(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    cmd = server_save(ws, 'says "memory_id":0 and 0')
    repo, service, step = await _step(pool, cmd)

    row = await repo.create_save(step.request)

    assert (row.outcome, row.duplicate) == ("saved", False)
    result = RESULT_DECODER.decode(row.result)
    assert result.data.memory_id and result.data.content_saved == 'says "memory_id":0 and 0'
    expected = msgspec.structs.replace(step.save.result, data=msgspec.structs.replace(
        step.save.result.data, memory_id=result.data.memory_id))
    assert row.result == encode(expected)  # stored as the worker encoded it, nothing reformatted
    assert await repo.stored_result(cmd.command_id, ws) == row.result
    assert (await service.run(cmd)).result == row.result  # the repeat's answer
    async with pool.acquire() as conn:
        facts = await conn.fetchval("SELECT event_facts FROM processed_commands WHERE command_id = $1",
                                    cmd.command_id)
    assert facts is None  # its result and command say everything its events do


async def _server_at_cap(pool, *, decay: bool, age_days: float) -> tuple[str, int]:
    """A workspace with decay on or off whose server memories (lineage 7) fill the cap of 100."""
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=decay)
        await add_server_memories(conn, server_id, 7, [age_days] * 100)
    return ws, server_id


async def test_an_evicting_save_stores_the_forgotten_row_and_the_metric_id_for_its_events(pool):
    ws, server_id = await _server_at_cap(pool, decay=True, age_days=90)
    cmd = server_save(ws, "replaces one", retrieval=GOOD_RETRIEVAL)
    repo, _, step = await _step(pool, cmd)
    assert step.save.eviction is not None

    row = await repo.create_save(step.request)

    assert row.outcome == "saved_with_eviction"
    result = RESULT_DECODER.decode(row.result)
    assert result.data.content_forgotten == "old #0" and "forgotten" in result.notice["title"]
    async with pool.acquire() as conn:
        facts = msgspec.json.decode(await conn.fetchval(
            "SELECT event_facts::text FROM processed_commands WHERE command_id = $1", cmd.command_id))
        victim = await conn.fetchval("SELECT min(server_memory_id) FROM server_memories WHERE server_id = $1"
                                     " AND content LIKE 'old #%'", server_id)
    assert facts["evicted_id"] < victim  # the first (oldest) legacy row is gone
    assert (facts["decay_days"], facts["metric_event_id"]) == (
        step.save.eviction.facts.decay_days, step.save.eviction.facts.metric_event_id)


@pytest.mark.parametrize("decay", [False, True])
async def test_a_save_that_writes_nothing_stores_nothing_and_reports_the_count_it_read(pool, decay):
    """At the cap with nothing eligible (decay off; or on, every row recent): the save's
    transaction stores nothing, and reports the outcome and count for the worker to word."""
    ws, server_id = await _server_at_cap(pool, decay=decay, age_days=1)
    cmd = server_save(ws, "no room", retrieval=GOOD_RETRIEVAL)
    repo, service, step = await _step(pool, cmd)

    row = await repo.create_save(step.request)

    assert (row.outcome, row.current_count, row.result) == ("at_cap", 100, None)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == 0
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 100
    handled = await service.run(cmd)  # the whole create: worded, then stored
    result = RESULT_DECODER.decode(handled.result)
    assert (result.data.status, result.data.current_count) == ("memory_save_failed_limit_exceeded", 100)
    assert await repo.stored_result(cmd.command_id, ws) == handled.result and handled.events == []


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
    picks the outcome Python names for that level."""
    assert SAVE_BY_LEVEL.keys() == set(Privacy)
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, user)
    cmd = personal_save(ws, user, "Mika", "{user} likes tea")
    repo, _, step = await _step(pool, cmd)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE users SET privacy_level = $2 WHERE user_disc_id = $1", user, int(level))

    row = await repo.create_save(step.request)

    assert row.outcome == SAVE_BY_LEVEL[level].value
    answer = CreateMemoryService(repo, Limits()).written(cmd, step, row)
    if level is Privacy.OPEN:
        assert isinstance(answer, Handled) and RESULT_DECODER.decode(answer.result).data.status == SAVED
    else:
        assert isinstance(answer, Refusal) and row.result is None  # nothing stored by the save
        assert answer.result == messages.privacy_restricted(cmd, "Mika", level)
