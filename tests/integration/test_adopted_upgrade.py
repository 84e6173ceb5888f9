"""A TomoriBot database adopted by a release before this one (the worker's migrations through
007, its functions then written in the migrations) upgrades with `memoryctl migrate` and keeps
every row: the bot's tables row for row, the worker's inbox rows, and a create that release
stored (its result text and event facts) answered after the upgrade with the bytes it stored.
Then the upgraded database takes new creates and updates of the same owner."""

from __future__ import annotations

import asyncpg

from contracts.kinds.create import CreateMemory
from db import adopt, functions, migrate
from db.connection import connect
from db.pool import create_pool
from db.repository import MemoryRepository
from tests import tomoribot
from tests.memoryctl import memoryctl as run_memoryctl
from tests.support.commands import create_command
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.services.stored import answer

OLD_RESULT = ('{"command_id":"old-1","success":true,"message":"Memory saved successfully","error":null,'
              '"data":{"status":"memory_saved_successfully","scope":"server_wide","memory_id":7,'
              '"content_saved":"{user} likes tea","content_forgotten":null,"reason":null},'
              '"invalidated":[{"cache":"tomori_state","key":"810000000000000001"}],"notice":null}')


async def memoryctl(dsn: str, *argv: str):
    return await run_memoryctl(list(argv), {"DATABASE_URL": dsn})


async def _inbox(conn: asyncpg.Connection) -> list[tuple]:
    return [tuple(r) for r in await conn.fetch(
        "SELECT command_id, kind, workspace_id, result::text, tenant, applied_by, events::text"
        " FROM memory_worker.processed_commands ORDER BY command_id")]


async def test_a_database_adopted_by_the_release_before_upgrades_and_keeps_every_row(pg_server, monkeypatch):
    dsn, world = await tomoribot.seeded_database(pg_server.dsn, prefix="upgrade")
    conn = await connect(dsn)  # the worker's session settings, as memoryctl adopt has them
    try:
        # Adopted as the release before this one did: its migrations (001 to 007); neither its
        # function files nor the directory functions of this release, which read columns its
        # later migrations add (the upgrade makes both).
        earlier = [m for m in migrate.available() if m.version <= 7]

        async def not_yet(*_args: object) -> None:
            pass

        monkeypatch.setattr(migrate, "available", lambda: earlier)
        monkeypatch.setattr(functions, "apply", not_yet)
        monkeypatch.setattr(migrate, "apply_directory", not_yet)
        await adopt.adopt(conn, Limits(max_server_memories=5, max_personal_memories=5))
        monkeypatch.undo()
        # What that release stored: a create's result with its event facts, as 007 kept them.
        await conn.execute(
            "INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result,"
            " applied_by, event_facts) VALUES ('old-1', 'create', $1, 'memory_saved_successfully', $2::json, 41,"
            " '{\"owner_id\": null}')", world.taught, OLD_RESULT)
        bot_before = await tomoribot.snapshot(conn)
        inbox_before = await _inbox(conn)

        done = await memoryctl(dsn, "migrate")
        assert done.returncode == 0, done
        assert "worker functions: made from db/functions/" in done.stdout, done.stdout
        applied = [m.name for m in migrate.available() if m.version > 7]
        assert all(name in done.stdout for name in applied), done.stdout

        assert await tomoribot.snapshot(conn) == bot_before
        assert await _inbox(conn) == inbox_before
        assert await conn.fetchval("SELECT facts::text FROM memory_worker.processed_commands"
                                   " WHERE command_id = 'old-1'") == '{"owner_id": null}'
        assert (await memoryctl(dsn, "migrate")).stdout.count("unchanged") == 2
    finally:
        await conn.close()

    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        repo = MemoryRepository(pool)
        stored = await repo.stored_command("old-1", world.taught)
        assert stored is not None and answer(stored).result == OLD_RESULT.encode()
        # The upgraded database takes this release's writes of the same owner.
        service = CreateMemoryService(repo, Limits(max_server_memories=50))
        [handled] = await service.run_batch([_create(world.taught, triggerer=world.mika)])
        assert handled.answer.status == "memory_saved_successfully", handled.answer.result
    finally:
        await pool.close()


def _create(workspace: str, *, triggerer: str) -> CreateMemory:
    return create_command(workspace, "{user} likes green tea", lineage_id=tomoribot.World.lineage,
                          triggerer={"id": triggerer, "name": "Mika"},
                          envelope_fields={"command_id": "new-1", "issued_at": "2026-12-03T00:00:00+00:00"})
