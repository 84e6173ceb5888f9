"""A create whose save hits a unique violation: only the inbox's (another delivery of the same
command stored its answer first) means "read the stored answer"; any other is a failure."""

from __future__ import annotations

import asyncpg
import msgspec
import pytest

from contracts.codec import RESULT_DECODER
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.support.directory import add_server
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService

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


async def _stored_by(pool, command_id: str, workspace_id: str, result: bytes) -> None:
    """A result another delivery (or another bot's worker, by the pool's tenant) stored first."""
    await pool.execute("INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)"
                       " VALUES ($1, 'create', $2, 'x', $3::json) ON CONFLICT (command_id) DO NOTHING",
                       command_id, workspace_id, result.decode())


async def _workspace(pool) -> str:
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    return ws


class FailingSaves(MemoryRepository):
    """The batch write fails with `violation` the first `times` times, then writes for real.
    The counts are kept in one dict, which the repository's sessions (shallow copies) share."""

    def __init__(self, pool, violation: asyncpg.UniqueViolationError, times: int) -> None:
        super().__init__(pool)
        self.violation, self.counts = violation, {"left": times, "saves": 0}

    @property
    def saves(self) -> int:
        return self.counts["saves"]

    async def create_batch(self, *args, **kwargs):
        self.counts["saves"] += 1
        if self.counts["left"]:
            self.counts["left"] -= 1
            raise self.violation
        return await super().create_batch(*args, **kwargs)


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
    assert RESULT_DECODER.decode(handled.answer.result).success
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
    path (the inbox insert's conflict), both in memory_create_batch()."""
    ws, other = await _workspace(pool), unique()
    repo = MemoryRepository(pool)
    cmd = server_save(ws, "" if refused else "a fact")  # blank content is refused before the save
    original = repo.create_contexts

    async def context_then_clash(*args, **kwargs):
        row = await original(*args, **kwargs)
        await _stored_by(pool, cmd.command_id, other, b'{"data": {"status": "x"}, "other": true}')
        return row

    repo.create_contexts = context_then_clash
    handled = await CreateMemoryService(repo, LIMITS).run(cmd)

    result = RESULT_DECODER.decode(handled.answer.result)
    assert handled.duplicate and result.data.status == "memory_command_invalid"
    assert "another workspace" in result.error
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                   " WHERE s.server_disc_id = $1", ws) == 0


async def _run_with_a_write_after_the_context(service, repo, cmd, batched, write):
    """Run `cmd` (alone, or in a batch with another create) with `write()` landing between the
    create's context read and its write: the race a real second delivery or another bot makes."""
    original = repo.create_contexts

    async def context_then_write(*args, **kwargs):
        found = await original(*args, **kwargs)
        await write()
        return found

    repo.create_contexts = context_then_write
    if batched:
        [handled, _] = await CreateMemoryService(repo, LIMITS, max_batch=4).run_batch(
            [cmd, server_save(unique(), "another workspace's fact")])
        return handled
    return await service.run(cmd)


@pytest.mark.parametrize("batched", [False, True], ids=["one-by-one", "batched"])
@pytest.mark.parametrize("refused", [False, True], ids=["save", "refusal"])
async def test_a_result_another_bot_stored_meanwhile_for_this_workspace_is_refused_as_a_clash(
        database_url, pool, refused, batched):
    """Bots apart (issue 29): as above, but the racing row is another bot's worker's, for the
    same workspace, so only its tenant tells it apart. Every write path (a save, a refusal,
    alone or in a batch) reads the tenant of what it found, and the clash is refused, never
    answered with the other bot's result."""
    ws = await _workspace(pool)
    pools = [await create_pool(database_url, min_size=1, max_size=2, tenant=t) for t in ("kaede", "tomori")]
    try:
        kaede, tomori = (MemoryRepository(p, p_tenant) for p, p_tenant in zip(pools, ("kaede", "tomori"), strict=True))
        cmd = server_save(ws, "" if refused else "a fact")
        service = CreateMemoryService(kaede, LIMITS)
        handled = await _run_with_a_write_after_the_context(
            service, kaede, cmd, batched,
            lambda: _stored_by(pools[1], cmd.command_id, ws, b'{"data": {"status": "x"}, "tomori": true}'))
        result = RESULT_DECODER.decode(handled.answer.result)
        assert handled.duplicate and result.data.status == "memory_command_invalid"
        assert "another bot" in result.error and b"tomori" not in handled.answer.result
        # A repeat after the race is refused the same way by the context read.
        again = await service.run(cmd)
        assert again.duplicate and b"tomori" not in again.answer.result
        assert RESULT_DECODER.decode(again.answer.result).data.status == "memory_command_invalid"
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                       " WHERE s.server_disc_id = $1", ws) == 0
            row = await conn.fetchrow("SELECT workspace_id, tenant FROM processed_commands WHERE command_id = $1",
                                      cmd.command_id)
        assert (row["workspace_id"], row["tenant"]) == (ws, "tomori")  # the workspace as the command named it
    finally:
        for p in pools:
            await p.close()


@pytest.mark.parametrize("batched", [False, True], ids=["one-by-one", "batched"])
@pytest.mark.parametrize("refused", [False, True], ids=["save", "refusal"])
async def test_a_result_this_bots_racing_delivery_stored_meanwhile_is_the_answer(database_url, pool, refused,
                                                                                batched):
    """The same race with the bot's own worker storing first (another delivery of the same
    command): the write finds this bot's row and answers its stored result, as does a repeat."""
    ws = await _workspace(pool)
    kaede_pool = await create_pool(database_url, min_size=1, max_size=2, tenant="kaede")
    try:
        kaede = MemoryRepository(kaede_pool, "kaede")
        cmd = server_save(ws, "" if refused else "a fact")
        service = CreateMemoryService(kaede, LIMITS)
        stored = b'{"command_id": "%s", "data": {"status": "stored first"}}' % cmd.command_id.encode()
        handled = await _run_with_a_write_after_the_context(
            service, kaede, cmd, batched, lambda: _stored_by(kaede_pool, cmd.command_id, ws, stored))
        assert handled.duplicate and msgspec.json.decode(handled.answer.result)["data"]["status"] == "stored first"
        # A fresh repository, without the hook: the repeat reads the stored row.
        again = await CreateMemoryService(MemoryRepository(kaede_pool, "kaede"), LIMITS).run(cmd)
        assert again.duplicate and msgspec.json.decode(again.answer.result)["data"]["status"] == "stored first"
    finally:
        await kaede_pool.close()
