"""Migration 003 on a standalone database made before it (issue 24, finding 8): the lineage
columns become bigint with every row kept, and the create's context read takes a bigint."""

from __future__ import annotations

from importlib import resources

import asyncpg

from db import facts, migrate
from db.connection import connect
from tests.conftest import unique


async def test_an_older_standalone_database_gets_bigint_lineages_and_keeps_its_rows(pg_server):
    name = f"old_{unique()}"
    admin = await asyncpg.connect(pg_server.dsn())
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    conn = await connect(pg_server.dsn(name))
    try:
        # The standalone layout and migrations as they were before 003: int32 lineages.
        layout = resources.files("db").joinpath("standalone.sql").read_text("utf-8")
        older = layout.replace("lineage_id bigint NOT NULL", "lineage_id integer NOT NULL").replace(
            "persona_lineage_id  bigint NOT NULL", "persona_lineage_id  integer NOT NULL")
        assert older != layout
        async with conn.transaction():
            await migrate.create_worker_schema(conn, "standalone")
            await conn.execute(older)
            await migrate.apply_directory(conn, facts.STANDALONE)
            for migration in migrate.available()[:2]:
                await migrate.apply_migration(conn, migration)
        server_id = await conn.fetchval("INSERT INTO servers (server_disc_id) VALUES ('1') RETURNING server_id")
        await conn.execute("INSERT INTO server_memories (server_id, persona_lineage_id, content) VALUES ($1, 7, 'kept')",
                           server_id)

        applied = await migrate.migrate(conn)

        assert applied[0] == "003_bigint_lineage.sql"
        kinds = {r[0]: r[1] for r in await conn.fetch(
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' AND column_name IN ('persona_lineage_id', 'lineage_id')")}
        assert set(kinds.values()) == {"bigint"}, kinds
        assert await conn.fetchval("SELECT content FROM server_memories WHERE persona_lineage_id = 7") == "kept"
        await conn.execute("INSERT INTO server_memories (server_id, persona_lineage_id, content) VALUES ($1, $2, 'big')",
                           server_id, 2**40)
        context = await conn.fetchval("SELECT memory_create_context('c', '1', '{}', $1::bigint)", 2**40)
        assert '"server_id"' in context
    finally:
        await conn.close()
