"""The worker's functions are made from db/functions/ (db/functions/__init__.py): exactly the
files' functions exist, a changed file is made again by the next migrate, a function no file
defines any more (one an older release's migration made) is dropped, each file's ALTERs hold,
and a body that names something missing fails the migrate, not a later call."""

from __future__ import annotations

import asyncpg
import pytest

from db import directory_functions, functions, migrate
from db.connection import connect
from tests.conftest import clone_database
from tests.integration.helpers import migrated_before

_WORKER_FUNCTIONS = ("SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n"
                     " ON n.oid = p.pronamespace WHERE n.nspname = 'memory_worker' ORDER BY 1")


async def _names(conn: asyncpg.Connection) -> set[str]:
    return {r[0] for r in await conn.fetch(_WORKER_FUNCTIONS)}


@pytest.fixture
async def conn(pg_server, template_db):
    c = await connect(await clone_database(pg_server, template_db))
    yield c
    await c.close()


async def test_a_migrated_database_has_exactly_the_files_functions_and_the_directory_ones(conn):
    assert await _names(conn) == set(functions.files()) | directory_functions.FUNCTION_NAMES
    assert await functions.made_from(conn) == functions.fingerprint()


async def test_each_files_alters_hold_after_it_is_made(conn):
    config = await conn.fetchval("SELECT proconfig FROM pg_catalog.pg_proc WHERE proname = 'memory_create_batch'")
    assert "plan_cache_mode=force_generic_plan" in config


async def test_a_changed_file_is_made_again_and_a_removed_one_dropped(conn, monkeypatch):
    changed = dict(functions.files())
    changed["memory_event_time"] = changed["memory_event_time"].replace("PARALLEL SAFE", "PARALLEL SAFE COST 7")
    del changed["memory_seed_context"]
    monkeypatch.setattr(functions, "files", lambda: changed)

    assert await migrate.migrate(conn) == []  # no migration: only the functions
    assert "memory_seed_context" not in await _names(conn)
    assert await conn.fetchval("SELECT procost FROM pg_catalog.pg_proc WHERE proname = 'memory_event_time'") == 7
    made = await functions.made_from(conn)
    assert made == functions.fingerprint()
    await migrate.migrate(conn)  # nothing changed since: nothing is made again
    assert await functions.made_from(conn) == made


async def test_a_body_naming_something_missing_fails_the_migrate_and_changes_nothing(conn, monkeypatch):
    files = functions.files()
    broken = dict(files)
    broken["memory_event_time"] = broken["memory_event_time"].replace("SELECT to_char(", "SELECT no_such_fn(")
    before = await functions.made_from(conn)
    monkeypatch.setattr(functions, "files", lambda: broken)
    with pytest.raises(asyncpg.UndefinedFunctionError):
        await migrate.migrate(conn)
    assert await functions.made_from(conn) == before
    assert await _names(conn) == set(files) | directory_functions.FUNCTION_NAMES


async def test_a_database_an_older_release_left_loses_the_functions_it_no_longer_has(pg_server, monkeypatch):
    dsn = await migrated_before(pg_server, monkeypatch, 8)
    conn = await connect(dsn)
    try:
        # What 001 to 007 made that no file makes now.
        await conn.execute("CREATE FUNCTION memory_worker.memory_create_save(p jsonb) RETURNS jsonb"
                           " LANGUAGE sql AS $$ SELECT p $$")
        applied = await migrate.migrate(conn)
        assert applied == [m.name for m in migrate.available() if m.version >= 8]
        assert await _names(conn) == set(functions.files()) | directory_functions.FUNCTION_NAMES
    finally:
        await conn.close()
