"""A create whose save hits a unique violation: only the inbox's (another delivery of the same
command stored its answer first) means "read the stored answer"; any other is a failure."""

from __future__ import annotations

import asyncpg
import pytest

from contracts.codec import RESULT_DECODER
from db.repository import MemoryRepository
from tests.support.directory import add_server
from worker.domain.model import Limits
from worker.services.create_memory import CreateMemoryService

from ..conftest import unique
from .helpers import server_save

LIMITS = Limits(max_server_memories=3, max_personal_memories=3)


async def _real_violation(pool, table: str) -> asyncpg.UniqueViolationError:
    """A unique violation as PostgreSQL reports it, on a table of the given name."""
    async with pool.acquire() as conn:
        await conn.execute(f"CREATE TEMP TABLE {table} (k int UNIQUE)")
        await conn.execute(f"INSERT INTO {table} VALUES (1)")
        try:
            await conn.execute(f"INSERT INTO {table} VALUES (1)")
        except asyncpg.UniqueViolationError as exc:
            return exc
        finally:
            await conn.execute(f"DROP TABLE {table}")
    raise AssertionError("no unique violation")


async def _workspace(pool) -> str:
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    return ws


class FailingSaves(MemoryRepository):
    """The save fails with `violation` the first `times` times, then saves for real."""

    def __init__(self, pool, violation: asyncpg.UniqueViolationError, times: int) -> None:
        super().__init__(pool)
        self.violation, self.left, self.saves = violation, times, 0

    async def create_save(self, *args, **kwargs):
        self.saves += 1
        if self.left:
            self.left -= 1
            raise self.violation
        return await super().create_save(*args, **kwargs)


async def test_a_unique_violation_of_another_table_fails_the_create_once_instead_of_retrying(pool):
    ws = await _workspace(pool)
    repo = FailingSaves(pool, await _real_violation(pool, "server_memories_clash"), times=1_000_000)

    with pytest.raises(asyncpg.UniqueViolationError):
        await CreateMemoryService(repo, LIMITS).run(server_save(ws, "collides with something else"))
    assert repo.saves == 1


async def test_an_inbox_conflict_reads_the_stored_answer_with_one_more_run(pool):
    ws = await _workspace(pool)
    repo = FailingSaves(pool, await _real_violation(pool, "processed_commands"), times=1)

    handled = await CreateMemoryService(repo, LIMITS).run(server_save(ws, "saved on the second run"))
    assert RESULT_DECODER.decode(handled.result).success
    assert repo.saves == 2


async def test_a_second_inbox_conflict_in_a_row_is_a_failure_not_a_loop(pool):
    ws = await _workspace(pool)
    repo = FailingSaves(pool, await _real_violation(pool, "processed_commands"), times=1_000_000)

    with pytest.raises(asyncpg.UniqueViolationError):
        await CreateMemoryService(repo, LIMITS).run(server_save(ws, "races forever"))
    assert repo.saves == 2


@pytest.mark.parametrize("refused", [False, True])
async def test_a_result_another_workspace_stored_meanwhile_is_refused_as_a_clash_not_answered(pool, refused):
    """The context read found nothing; by the write, a command of another workspace with the
    same id stored its result. The write reports it, and seen_before() refuses the clash, as
    the context read would have: on the save path (found under the lock) and on the refusal
    path (the inbox insert's conflict)."""
    ws, other = await _workspace(pool), unique()
    repo = MemoryRepository(pool)
    cmd = server_save(ws, "" if refused else "a fact")  # blank content is refused before the save
    original = repo.create_context

    async def context_then_clash(*args, **kwargs):
        row = await original(*args, **kwargs)
        await repo.record_result(cmd.command_id, "create", other, b'{"data": {"status": "x"}, "other": true}')
        return row

    repo.create_context = context_then_clash
    handled = await CreateMemoryService(repo, LIMITS).run(cmd)

    result = RESULT_DECODER.decode(handled.result)
    assert handled.duplicate and result.data.status == "memory_command_invalid"
    assert "another workspace" in result.error
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                   " WHERE s.server_disc_id = $1", ws) == 0
