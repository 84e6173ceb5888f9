"""Migration 004 (bots apart, issue 29) on a database that ran the earlier ones: the inbox
gains its `tenant` column (so did the outbox, which 009 drops), the rows already there stay
the tenant-less worker's, and the ledger records it after 001 and 002."""

from __future__ import annotations

import asyncpg

from db import migrate
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import unique
from tests.integration.helpers import migrated_before
from worker.services.stored import answer


async def test_a_database_migrated_before_004_gets_the_tenant_columns_and_keeps_its_rows(pg_server, monkeypatch):
    everything = migrate.available()
    later = [m.name for m in everything if m.version >= 4]
    assert later[0] == "004_tenants.sql"
    dsn = await migrated_before(pg_server, monkeypatch, 4)

    cid, ws = unique("c-"), unique()
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result)"
                           " VALUES ($1, 'reinforce', $2, 'reinforced', '{\"before\": true}')", cid, ws)
        assert await migrate.migrate_dsn(dsn) == later  # 004, then what came after it
        assert await migrate.migrate_dsn(dsn) == []
        assert await conn.fetchval("SELECT tenant FROM memory_worker.processed_commands WHERE command_id = $1",
                                   cid) == ""
        assert [r["name"] for r in await conn.fetch(
            "SELECT name FROM memory_worker.schema_migrations ORDER BY version")] == [m.name for m in everything]
    finally:
        await conn.close()

    # The worker without a tenant still finds the result it stored before; a tenant's does not.
    for tenant, found in (("", b'{"before": true}'), ("kaede", None)):
        pool = await create_pool(dsn, min_size=1, max_size=1, tenant=tenant)
        try:
            stored = await MemoryRepository(pool, tenant).stored_command(cid, ws)
            assert (None if stored is None else answer(stored).result) == found
        finally:
            await pool.close()
