"""One schema however a database got it, in both modes: a fresh database (standalone, or a
TomoriBot database adopted now) has exactly the schema of one made by the first release (the
mode's frozen base and the migrations of then) and of one made by the release with
migrations 001 to 013 (its frozen layout, tests/integration/release_013/), each upgraded with
`memoryctl migrate`. The schema is compared as `pg_dump --schema-only` prints it, less the
order of a table's columns (an upgrade appends what a later migration adds), with the
worker's ledger and mode row. The release's stored commands are answered after the upgrade.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import msgspec
import pytest

from db import adopt, functions, migrate
from db.connection import connect
from db.pool import create_pool
from db.repository import MemoryRepository
from tests import tomoribot
from tests.integration.helpers import migrated_before
from tests.memoryctl import memoryctl
from worker.domain.workspace import Limits
from worker.local.embedded import PostgresServer
from worker.services.stored import answer

RELEASE = Path(__file__).parent / "release_013"
FIRST_RELEASE = 2  # the migrations the first release had
WORKSPACE = "810000000000000001"  # the stored commands' (tests/integration/release_013/stored_commands.sql)
REINFORCE_RESULT = (b'{"command_id":"release-013-reinforce","success":true,"data":{"status":"reinforced",'
                    b'"memory_id":7}}')
LIMITS = Limits(max_server_memories=5, max_personal_memories=5)


def _name(dsn: str) -> str:
    return dsn.split("?", 1)[0].rsplit("/", 1)[1]


def normalised_dump(pg_server: PostgresServer, dsn: str) -> list[str]:
    """The database's objects as `pg_dump --schema-only` prints them, one entry per object
    (split at its `-- Name:` header), a table's column lines sorted, entries sorted."""
    dump = pg_server.tool("pg_dump", "--schema-only", "--no-owner", "--no-privileges", "-h", "127.0.0.1",
                          "-p", str(pg_server.port), "-U", pg_server.user, "-d", _name(dsn))
    entries: list[list[str]] = []
    for line in dump.splitlines():
        if line.startswith("-- Name: "):
            entries.append([line])
        elif entries and line.strip() and not line.startswith(("--", "\\")):
            entries[-1].append(line)
    return sorted("\n".join([header, *_columns_sorted(body)]) for header, *body in entries)


def _columns_sorted(body: list[str]) -> list[str]:
    if not (body and body[0].startswith("CREATE TABLE ") and body[-1] == ");"):
        return body
    return [body[0], *sorted(line.rstrip(",") for line in body[1:-1]), body[-1]]


async def worker_rows(dsn: str) -> dict[str, list[tuple[object, ...]]]:
    conn = await asyncpg.connect(dsn)
    try:
        return {
            "ledger": [tuple(r) for r in await conn.fetch(
                "SELECT version, name FROM memory_worker.schema_migrations ORDER BY version")],
            "mode": [tuple(r) for r in await conn.fetch(
                "SELECT mode, bot_schema_version, directory_fingerprint, functions_fingerprint"
                " FROM memory_worker.database_mode")],
        }
    finally:
        await conn.close()


async def assert_same_schema(pg_server: PostgresServer, fresh: str, upgraded: str) -> None:
    want, got = normalised_dump(pg_server, fresh), normalised_dump(pg_server, upgraded)
    only_fresh = [entry for entry in want if entry not in got]
    only_upgraded = [entry for entry in got if entry not in want]
    assert (only_fresh, only_upgraded) == ([], []), "fresh and upgraded databases differ"
    assert await worker_rows(upgraded) == await worker_rows(fresh)


async def upgrade(dsn: str) -> None:
    done = await memoryctl(["migrate"], {"DATABASE_URL": dsn})
    assert done.returncode == 0, done


async def as_release_013(dsn: str, mode: str, bot_version: str | None = None) -> None:
    """What that release made: its layout and its migrations, then the commands it stored.
    Neither its directory nor its worker functions: this release's are made by the upgrade
    (they read what every migration made)."""
    conn = await connect(dsn)  # the worker's search path, as the release's migrate had it
    try:
        async with conn.transaction():
            await migrate.create_worker_schema(conn, mode, bot_version)
            await conn.execute((RELEASE / f"{mode}.sql").read_text("utf-8"))
            for migration in migrate.available():
                if migration.version <= 13:
                    await migrate.apply_migration(conn, migration)
        await conn.execute((RELEASE / "stored_commands.sql").read_text("utf-8"))
    finally:
        await conn.close()


async def assert_stored_commands_answered(dsn: str) -> None:
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        repo = MemoryRepository(pool)
        create = await repo.stored_command("release-013-create", WORKSPACE)
        reinforce = await repo.stored_command("release-013-reinforce", WORKSPACE)
    finally:
        await pool.close()
    assert create is not None and reinforce is not None
    # A create's answer is worded by the code that renders it; what it says happened stays.
    data = msgspec.json.decode(answer(create).result)["data"]
    assert (data["status"], data["memory_id"], data["content_saved"]) == (
        "memory_saved_successfully", 7, "{user} likes green tea")
    assert answer(reinforce).result == REINFORCE_RESULT


async def test_a_fresh_standalone_database_equals_one_upgraded_from_the_first_release_and_the_last(
        pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = await tomoribot.new_database(pg_server.dsn, prefix="fresh")
    await migrate.migrate_dsn(fresh)
    from_base = await migrated_before(pg_server, monkeypatch, FIRST_RELEASE + 1)
    from_release = await tomoribot.new_database(pg_server.dsn, prefix="release")
    await as_release_013(from_release, "standalone")

    for older in (from_base, from_release):
        await upgrade(older)
        await assert_same_schema(pg_server, fresh, older)
    await assert_stored_commands_answered(from_release)


async def test_a_freshly_adopted_database_equals_one_adopted_by_the_first_release_and_by_the_last(
        pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh, _ = await tomoribot.seeded_database(pg_server.dsn, prefix="fresh")
    conn = await connect(fresh)
    try:
        await adopt.adopt(conn, LIMITS)
        bot_version = await conn.fetchval("SELECT bot_schema_version FROM memory_worker.database_mode")
    finally:
        await conn.close()
    from_base = await _adopted_by_the_first_release(pg_server, monkeypatch)
    from_release, _ = await tomoribot.seeded_database(pg_server.dsn, prefix="release")
    await as_release_013(from_release, "adopted", bot_version)

    for older in (from_base, from_release):
        await upgrade(older)
        await assert_same_schema(pg_server, fresh, older)
    await assert_stored_commands_answered(from_release)


async def _adopted_by_the_first_release(pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """The base and the first release's migrations; this release's functions come with the upgrade."""
    dsn, _ = await tomoribot.seeded_database(pg_server.dsn, prefix="base")
    earlier = [m for m in migrate.available() if m.version <= FIRST_RELEASE]

    async def not_yet(*_args: object) -> None:
        pass

    monkeypatch.setattr(migrate, "available", lambda: earlier)
    monkeypatch.setattr(functions, "apply", not_yet)
    monkeypatch.setattr(migrate, "apply_directory", not_yet)
    conn = await connect(dsn)
    try:
        await adopt.adopt(conn, LIMITS)
    finally:
        await conn.close()
        monkeypatch.undo()
    return dsn

