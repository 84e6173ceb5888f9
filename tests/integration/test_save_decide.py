"""A create's save is decided by memory_save_decide() and applied by memory_create_batch()
alone; a dry run (memory_create_dry_batch) only decides. The decision is STABLE, so a write
given to it fails in every run, dry or not, instead of writing in a dry run."""

from __future__ import annotations

import asyncpg
import pytest

from db import functions
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import clone_database
from tests.support.directory import add_server
from tests.support.planned import planned_batch
from worker.domain.workspace import Limits

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, add_server_memories, server_save

# A write slipped into the decision, where the capacity rule reads the owner's rows.
_WRITE = "    INSERT INTO servers (server_disc_id) VALUES ('written-by-a-decision');\n"


@pytest.fixture
async def own_pool(pg_server, template_db):
    """A database of its own: the test replaces one of its functions."""
    pool = await create_pool(await clone_database(pg_server, template_db), min_size=1, max_size=2)
    yield pool
    await pool.close()


async def test_a_write_added_to_the_decision_fails_and_a_dry_run_writes_nothing(own_pool):
    ws = unique()
    async with own_pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, 7, [90.0] * 3)
    batch = await planned_batch(own_pool, [server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL)],
                                Limits(max_server_memories=3))
    repo = MemoryRepository(own_pool)

    (dry,) = await repo.create_dry_batch(batch)
    assert dry.stored.facts is not None and dry.stored.facts.outcome == "saved_with_eviction"
    assert await own_pool.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 3
    assert await repo.stored_command(batch.ops[0].command_id, ws) is None

    source = functions.source("memory_save_decide")
    assert source.count("\nBEGIN\n") == 1
    await own_pool.execute(source.replace("\nBEGIN\n", "\nBEGIN\n" + _WRITE))
    for run in (repo.create_dry_batch, repo.create_batch):
        with pytest.raises(asyncpg.PostgresError, match="INSERT is not allowed in a non-volatile function"):
            await run(batch)
    assert await own_pool.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = 'written-by-a-decision'") == 0
