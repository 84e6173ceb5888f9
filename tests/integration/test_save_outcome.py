"""The outcomes of a save are one set of labels in Python and in SQL (worker/domain/outcome.py,
db/migrations/002_save_outcome.sql), and the request carries a result for every one."""

from __future__ import annotations

import msgspec

from contracts.codec import encode
from db.repository import MemoryRepository
from tests.support.directory import add_server
from worker.domain.arguments import parse_tool_args
from worker.domain.model import Limits, SaveOutcome
from worker.domain.outcome import SQL_TYPE
from worker.services.create_memory import CreateMemoryService, Save

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, server_save


async def test_the_sql_enum_has_exactly_the_python_outcomes_in_order(pool):
    labels = await pool.fetchval(f"SELECT enum_range(NULL::{SQL_TYPE})::text[]")
    assert labels == [outcome.value for outcome in SaveOutcome]


async def test_a_save_request_carries_one_result_per_outcome_keyed_by_its_label(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
    cmd = server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL)
    row = await MemoryRepository(pool).create_context(cmd.command_id, ws, [], 7)

    step = CreateMemoryService(MemoryRepository(pool), Limits()).step(cmd, parse_tool_args(cmd.tool_args), row)

    assert isinstance(step, Save), step
    request = msgspec.json.decode(encode(step.request))
    assert set(request["results"]) == {outcome.value for outcome in SaveOutcome}
    assert request["eviction_notice"] is not None  # decay on and retrieval usable: it may evict
