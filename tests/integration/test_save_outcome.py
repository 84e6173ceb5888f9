"""The outcomes of a save are one set of labels in Python and in SQL (worker/domain/outcome.py,
db/migrations/002_save_outcome.sql), and the request carries a result for every one. So are
the privacy levels (worker/domain/model.py's Privacy): the schema's CHECK and what the locked
save reads. A request carries the result of every outcome its save can reach."""

from __future__ import annotations

import re

import msgspec
import pytest

from contracts.codec import encode
from db.repository import MemoryRepository
from tests.support.directory import add_server, add_user
from worker.domain.arguments import parse_tool_args
from worker.domain.model import Limits, Privacy, SaveOutcome
from worker.domain.outcome import SQL_TYPE
from worker.domain.targets import lookup_ids
from worker.services.create_memory import CreateMemoryService, Save

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, personal_save, server_save


async def test_the_sql_enum_has_exactly_the_python_outcomes_in_order(pool):
    labels = await pool.fetchval(f"SELECT enum_range(NULL::{SQL_TYPE})::text[]")
    assert labels == [outcome.value for outcome in SaveOutcome]


async def _request(pool, cmd) -> dict:
    """The memory_create_save() argument the service builds for `cmd` after its real context read."""
    args = parse_tool_args(cmd.tool_args)
    row = await MemoryRepository(pool).create_context(cmd.command_id, cmd.workspace_id, list(lookup_ids(cmd, args)), 7)
    step = CreateMemoryService(MemoryRepository(pool), Limits()).step(cmd, args, row)
    assert isinstance(step, Save), step
    decoded: dict = msgspec.json.decode(encode(step.request))
    return decoded


async def test_a_server_save_carries_one_result_per_reachable_outcome_keyed_by_its_label(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
    cmd = server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL)

    request = await _request(pool, cmd)

    # Decay on and retrieval usable: it may evict. A server's memories know no privacy.
    assert set(request["results"]) == {"saved", "saved_with_eviction", "at_cap", "over_cap"}
    assert request["eviction_notice"] is not None


async def test_a_save_that_may_not_evict_carries_no_eviction_result(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=False)
    cmd = server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL)

    request = await _request(pool, cmd)

    assert set(request["results"]) == {"saved", "at_cap", "over_cap"}
    assert request["eviction_notice"] is None


async def test_a_personal_save_carries_a_result_for_every_outcome(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
        await add_user(conn, f"u-{ws}", nickname="Mika")
    cmd = personal_save(ws, f"u-{ws}", "Mika", "likes tea", retrieval=GOOD_RETRIEVAL)

    request = await _request(pool, cmd)

    assert request["scope"] == "personal"
    assert set(request["results"]) == {outcome.value for outcome in SaveOutcome}


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
    repo = MemoryRepository(pool)
    cmd = personal_save(ws, user, "Mika", "{user} likes tea")
    args = parse_tool_args(cmd.tool_args)
    step = CreateMemoryService(repo, Limits()).step(
        cmd, args, await repo.create_context(cmd.command_id, ws, lookup_ids(cmd, args), 7))
    assert isinstance(step, Save), step
    async with pool.acquire() as conn:
        await conn.execute("UPDATE users SET privacy_level = $2 WHERE user_disc_id = $1", user, int(level))

    written = await repo.create_save(step.request)

    expected = step.request.results[SAVE_BY_LEVEL[level]]
    got = msgspec.json.decode(bytes(written.result))
    assert (got["data"]["status"], got["error"]) == (expected.data.status, expected.error)
