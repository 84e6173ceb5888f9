"""Memory rows and commands for integration tests; the directory rows come from tests/support/directory.py."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg

from contracts.envelope import Envelope
from contracts.kinds.create import CreateMemory
from db.inbox import EventRow
from db.repository import MemoryRepository
from tests.support.commands import create_command
from worker.services.stored import published_events

GOOD_RETRIEVAL = {"rag_available": True, "embedding_model": "m", "embedding_credentials": True}


async def add_server_memories(conn: asyncpg.Connection, server_id: int, lineage: int, ages_days: list[float], *,
                              manual: bool = False, source: str = "legacy",
                              reinforced_days_ago: list[float | None] | None = None) -> list[int]:
    now = datetime.now(UTC)
    rows = []
    for i, age in enumerate(ages_days):
        reinforced = reinforced_days_ago[i] if reinforced_days_ago else None
        rows.append((server_id, lineage, f"old #{i}", manual, source, now - timedelta(days=age),
                     None if reinforced is None else now - timedelta(days=reinforced)))
    ids = []
    for row in rows:
        ids.append(await conn.fetchval(
            "INSERT INTO server_memories (server_id, persona_lineage_id, content, manually_written, source,"
            " created_at, last_reinforced_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING server_memory_id",
            *row))
    return ids


async def add_personal_memories(conn: asyncpg.Connection, user_id: int, lineage: int, ages_days: list[float],
                                source: str = "legacy") -> list[int]:
    now = datetime.now(UTC)
    return [
        await conn.fetchval(
            "INSERT INTO personal_memories (user_id, persona_lineage_id, content, source, created_at)"
            " VALUES ($1, $2, $3, $4, $5) RETURNING personal_memory_id",
            user_id, lineage, f"personal #{i}", source, now - timedelta(days=age))
        for i, age in enumerate(ages_days)
    ]


# The integration tests' creates carry little beyond what the contract requires (and the
# triggerer every database knows: tests/support/directory.py add_triggerer).
_MINIMAL: dict = {"bot_user_id": "100000000000000001", "channel": {"id": "200000000000000001"}}


def server_save(workspace: str, content: str, *, lineage: int = 7, retrieval: dict | None = None,
                **over) -> CreateMemory:
    return create_command(workspace, content, lineage_id=lineage,
                          **{**_MINIMAL, **over, "retrieval": over.get("retrieval", retrieval or {})})


def personal_save(workspace: str, user_disc_id: str, name: str, content: str, *, lineage: int = 7,
                  retrieval: dict | None = None) -> CreateMemory:
    return create_command(workspace, content, scope="target_user", target=name, lineage_id=lineage,
                          member_matches=[{"id": user_disc_id, "display_name": name}], retrieval=retrieval or {},
                          **_MINIMAL)


async def event_subjects(conn: asyncpg.Connection, command_id: str) -> list[str]:
    """The subjects of the events a command (not a create: inbox_row_events) stored whole
    with its inbox row, in publish order."""
    return [r[0] for r in await conn.fetch(
        "SELECT e ->> 'subject' FROM processed_commands, jsonb_array_elements(coalesce(events, '[]')) WITH ORDINALITY"
        " AS t(e, n) WHERE command_id = $1 ORDER BY n", command_id)]


async def inbox_row_events(pool: asyncpg.Pool, cmd: Envelope) -> list[EventRow]:
    """The events a command's inbox row publishes when its delivery comes back: kept whole,
    or for a create's save rendered from its stored decision and facts
    (worker/services/stored.py, published_events); [] without a row."""
    stored = await MemoryRepository(pool).stored_command(cmd.command_id, cmd.workspace_id)
    return [] if stored is None else published_events(stored)


@asynccontextmanager
async def module_database(pg_server, template_db: str):
    """One fresh migrated database for a whole test module (cloning one per test costs ~0.3 s).

    Tests sharing it keep apart by unique workspace and user ids and owner-scoped queries.
    """
    from db.pool import create_pool
    from tests.conftest import clone_database

    pool = await create_pool(await clone_database(pg_server, template_db), min_size=1, max_size=20)
    try:
        yield pool
    finally:
        await pool.close()


async def raw_consumer_info(nc, stream: str, durable: str) -> dict:
    """Consumer info as the server sends it: nats-py's ConsumerConfig drops the priority fields."""
    reply = await nc.request(f"$JS.API.CONSUMER.INFO.{stream}.{durable}", b"", timeout=5)
    return json.loads(reply.data)


async def migrated_before(pg_server, monkeypatch, version: int) -> str:
    """A fresh database as a release before migration `version` left it: the migrations before
    it, and neither worker nor directory functions (db/functions/ and db/directory_functions.py make this
    release's, which read what every migration made); the DSN. `monkeypatch` is undone before
    it returns."""
    from db import functions, migrate
    from tests.conftest import unique

    name = f"mig_{unique()}"
    admin = await asyncpg.connect(pg_server.dsn())
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    dsn = pg_server.dsn(name)
    earlier = [m for m in migrate.available() if m.version < version]

    async def not_yet(conn: asyncpg.Connection) -> None:
        pass

    monkeypatch.setattr(migrate, "available", lambda: earlier)
    async def no_directory(conn: asyncpg.Connection, bodies: dict[str, str]) -> None:
        pass

    monkeypatch.setattr(functions, "apply", not_yet)
    monkeypatch.setattr(migrate, "apply_directory", no_directory)
    assert await migrate.migrate_dsn(dsn) == [m.name for m in earlier]
    monkeypatch.undo()
    return dsn
