"""Deliveries of one command running at the same time: one effect, one answer."""

from __future__ import annotations

import asyncio

from contracts.codec import OP_RESULT_DECODER
from db.repository import MemoryRepository
from tests.support.commands import reinforce_command
from tests.support.directory import add_server
from worker.kinds.reinforce.service import ReinforceService

from ..conftest import unique
from .helpers import add_server_memories


async def test_concurrent_deliveries_of_a_reinforcement_count_once(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        (memory_id,) = await add_server_memories(conn, server_id, 7, [40])
    cmd = reinforce_command(ws, [("server", memory_id)], lineage_id=7)
    svc = ReinforceService(MemoryRepository(pool))

    handled = await asyncio.gather(*(svc.run(cmd) for _ in range(6)))

    answers = {OP_RESULT_DECODER.decode(h.answer.result).data.count for h in handled}
    assert answers == {1}
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT reinforcement_count FROM server_memories WHERE server_memory_id = $1",
                                   memory_id) == 1
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == 1
