"""The secret guard per workspace on real PostgreSQL, in both database modes (docs/design.md,
sections 4.1 and 7.1): `memoryctl workspace set --secret-guard on|off|default` writes the
worker's own setting (standalone: `servers`; adopted: `memory_worker.workspace_settings`,
never a bot table), `workspace show` reads it back, the create's context read carries it, the
operator's default applies where a workspace made no choice, and a refusal stores its kind
alone. Migration 011 adds the column to a database an older release set up, in either mode."""

from __future__ import annotations

import os

import asyncpg
import msgspec
import pytest

from contracts.codec import RESULT_DECODER
from contracts.kinds.create import INVALID_CONTENT, SAVED
from db.pool import create_pool
from db.repository import MemoryRepository
from tests import tomoribot
from tests.conftest import ROOT, unique
from tests.memoryctl import memoryctl as in_process
from tests.support.directory import add_server
from tests.support.secret_corpus import CREDENTIALS, ONE_OF_EACH_SHAPE
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService

from .helpers import migrated_before, server_save

SECRET = next(c for c in CREDENTIALS if c.kind == "openai_key")


def memoryctl(dsn: str, *args: str):
    env = dict(os.environ, DATABASE_URL=dsn, NATS_URL="nats://127.0.0.1:1", LOG_FORMAT="json", PYTHONPATH=str(ROOT),
               METRICS_PORT="0")
    return in_process([*args], env)


async def shown_guard(dsn: str, workspace: str) -> str:
    done = await memoryctl(dsn, "workspace", "show", workspace)
    assert done.returncode == 0, done
    return next(line.split(None, 1)[1] for line in done.stdout.splitlines() if line.split()[0] == "secret_guard")


async def create(pool, workspace: str, content: str, *, lineage: int = 7, limits: Limits = Limits()) -> str:
    handled = await CreateMemoryService(MemoryRepository(pool), limits).run(server_save(workspace, content,
                                                                                        lineage=lineage))
    return RESULT_DECODER.decode(handled.answer.result).data.status


async def rows_holding(pool, text: str) -> list[str]:
    """Every table of every schema (but the catalogs) with a row whose text holds `text`."""
    tables = await pool.fetch("SELECT table_schema, table_name FROM information_schema.tables"
                              " WHERE table_type = 'BASE TABLE'"
                              " AND table_schema NOT IN ('pg_catalog', 'information_schema')")
    found = []
    for t in tables:
        name = f'"{t["table_schema"]}"."{t["table_name"]}"'
        if await pool.fetchval(f"SELECT EXISTS (SELECT 1 FROM {name} r WHERE strpos(r::text, $1) > 0)", text):
            found.append(name)
    return found


async def test_standalone_the_switch_the_default_and_what_a_refusal_stores(database_url, pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)

    assert await shown_guard(database_url, ws) == "default (SECRET_GUARD_DEFAULT, on unless set off)"
    refused = await create(pool, ws, SECRET.content)
    assert refused == INVALID_CONTENT
    stored = await pool.fetchval("SELECT decision::text FROM processed_commands WHERE workspace_id = $1", ws)
    assert msgspec.json.decode(stored) == {"decided": "secret_refused", "tool_scope": "server_wide",
                                           "kind": "openai_key"}
    assert await rows_holding(pool, SECRET.secret) == []

    off = await memoryctl(database_url, "workspace", "set", ws, "--secret-guard", "off")
    assert off.returncode == 0 and ["secret_guard", "False"] in [line.split() for line in off.stdout.splitlines()]
    assert await pool.fetchval("SELECT secret_guard_enabled FROM servers WHERE server_disc_id = $1", ws) is False
    assert await create(pool, ws, SECRET.content) == SAVED  # the workspace allowed it

    assert (await memoryctl(database_url, "workspace", "set", ws, "--secret-guard", "default")).returncode == 0
    assert await pool.fetchval("SELECT secret_guard_enabled FROM servers WHERE server_disc_id = $1", ws) is None
    assert await create(pool, ws, SECRET.content + " again") == INVALID_CONTENT
    # The operator's default decides for a workspace without a choice; a workspace's choice wins.
    assert await create(pool, ws, SECRET.content + " once more", limits=Limits(secret_guard_default=False)) == SAVED
    assert (await memoryctl(database_url, "workspace", "set", ws, "--secret-guard", "on")).returncode == 0
    assert await shown_guard(database_url, ws) == "True"
    assert await create(pool, ws, SECRET.content + " and on", limits=Limits(secret_guard_default=False)) \
        == INVALID_CONTENT


async def test_each_way_of_writing_a_credential_is_refused_and_technical_prose_saved(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    for shape, credential in ONE_OF_EACH_SHAPE.items():
        assert await create(pool, ws, credential.content) == INVALID_CONTENT, shape
        assert await rows_holding(pool, credential.secret) == [], shape
    technical = ("the refresh token is HS512-signed", "the NFT token is ERC1155", "the API key is UTF8-encoded",
                 "token是ERC1155标准")
    for content in technical:
        assert await create(pool, ws, content) == SAVED, content
    saved = await pool.fetch("SELECT content FROM server_memories m JOIN servers s USING (server_id)"
                             " WHERE s.server_disc_id = $1", ws)
    assert sorted(row["content"] for row in saved) == sorted(technical)


def test_a_bad_value_is_an_argparse_error_naming_it():
    from worker.cli.memoryctl import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["workspace", "set", "1", "--secret-guard", "maybe"])


async def test_adopted_the_switch_is_the_workers_own_setting_and_no_bot_row_changes(pg_server):
    dsn, world = await tomoribot.seeded_database(pg_server.dsn, prefix="guard")
    assert (await memoryctl(dsn, "adopt")).returncode == 0
    conn = await asyncpg.connect(dsn)
    try:
        before = await tomoribot.snapshot(conn)
    finally:
        await conn.close()
    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        assert await create(pool, world.taught, SECRET.content, lineage=world.lineage) == INVALID_CONTENT

        off = await memoryctl(dsn, "workspace", "set", world.taught, "--secret-guard", "off")
        assert off.returncode == 0, off
        assert await shown_guard(dsn, world.taught) == "False"
        assert await pool.fetchval("SELECT w.secret_guard_enabled FROM memory_worker.workspace_settings w"
                                   " JOIN servers s USING (server_id) WHERE s.server_disc_id = $1", world.taught) is False
        assert await create(pool, world.taught, SECRET.content, lineage=world.lineage) == SAVED

        assert (await memoryctl(dsn, "workspace", "set", world.taught, "--secret-guard", "default")).returncode == 0
        assert await create(pool, world.taught, SECRET.content + " again", lineage=world.lineage) == INVALID_CONTENT
        mistyped = await memoryctl(dsn, "workspace", "set", "299999999999999999", "--secret-guard", "off")
        assert mistyped.returncode == 2 and "the bot has no server" in mistyped.stdout
    finally:
        await pool.close()
    conn = await asyncpg.connect(dsn)
    try:
        after = await tomoribot.snapshot(conn)
    finally:
        await conn.close()
    # The bot's tables: only the one memory the workspace allowed was added.
    assert {k: v for k, v in after.items() if k != "server_memories"} == \
        {k: v for k, v in before.items() if k != "server_memories"}
    assert len(after["server_memories"]) == len(before["server_memories"]) + 1


async def test_migration_011_adds_the_column_to_a_standalone_database_an_older_release_set_up(pg_server, monkeypatch):
    dsn = await migrated_before(pg_server, monkeypatch, 11)
    conn = await asyncpg.connect(dsn)
    try:
        # The base and the migrations before 011: no column yet, no directory functions.
        assert await conn.fetchval("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'"
                                   " AND table_name = 'servers' AND column_name = 'secret_guard_enabled'") == 0
        done = await memoryctl(dsn, "migrate")
        assert done.returncode == 0 and "011_secret_guard.sql" in done.stdout, done
        assert await conn.fetchval("SELECT count(*) FROM memory_worker.directory_workspaces()"
                                   " WHERE secret_guard_enabled IS NOT NULL") == 0
    finally:
        await conn.close()


async def test_migration_011_adds_the_column_to_an_adopted_database_an_older_release_set_up(pg_server):
    dsn, world = await tomoribot.seeded_database(pg_server.dsn, prefix="guardmig")
    assert (await memoryctl(dsn, "adopt")).returncode == 0
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("ALTER TABLE memory_worker.workspace_settings DROP COLUMN secret_guard_enabled;"
                           " DELETE FROM memory_worker.schema_migrations WHERE version = 11;"
                           " UPDATE memory_worker.database_mode SET directory_fingerprint = 'older'")
        done = await memoryctl(dsn, "migrate")
        assert done.returncode == 0 and "011_secret_guard.sql" in done.stdout, done
        assert (await memoryctl(dsn, "workspace", "set", world.taught, "--secret-guard", "off")).returncode == 0
        assert await conn.fetchval("SELECT secret_guard_enabled FROM memory_worker.directory_workspaces()"
                                   " WHERE server_disc_id = $1", world.taught) is False
    finally:
        await conn.close()
