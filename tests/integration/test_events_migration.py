"""Migration 009 (a create's row keeps its decision; the outbox table goes) on a database a
release of 008 used.

- Events an older release left unpublished in the outbox table: 009 refuses, naming them and
  what to do (deploy/README.md, "Upgrading"), and changes nothing; once they are published it
  applies.
- A create stored before 009 (its result text, no decision) is answered after the upgrade
  with the bytes stored, by the result lookup and by a repeat; the redelivery of the message
  that applied it publishes nothing (its events were built by code since gone) and says so.
"""

from __future__ import annotations

import json

import asyncpg
import msgspec
import pytest
from structlog.testing import capture_logs

from contracts import subjects
from contracts.kinds.create import CreateMemory
from db import migrate
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import unique
from tests.integration.helpers import migrated_before
from tests.support.commands import create_bytes, create_fields
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.services.stored import answer, seen_before

NINE = [m.name for m in migrate.available() if m.version >= 9]


async def _schema(conn: asyncpg.Connection) -> dict:
    """What 009 would change: the inbox's columns, the outbox's rows, the migrations applied."""
    return {
        "columns": await conn.fetch("SELECT column_name, is_nullable FROM information_schema.columns"
                                    " WHERE table_schema = 'memory_worker' AND table_name = 'processed_commands'"
                                    " ORDER BY column_name"),
        "outbox": await conn.fetch("SELECT id, command_id, published_at FROM memory_worker.outbox ORDER BY id"),
        "inbox": await conn.fetch("SELECT * FROM memory_worker.processed_commands ORDER BY command_id"),
        "migrations": await conn.fetch("SELECT version FROM memory_worker.schema_migrations ORDER BY version"),
    }


async def test_an_upgrade_with_events_left_in_the_outbox_is_refused_and_changes_nothing(pg_server, monkeypatch):
    dsn = await migrated_before(pg_server, monkeypatch, 9)
    cid, ws = unique("c-"), unique()
    conn = await asyncpg.connect(dsn)
    try:
        # What a release before 007 left when its worker died between commit and publish:
        # the command's row, one event published, two not.
        await conn.execute("INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result)"
                           " VALUES ($1, 'create', $2, 'memory_saved_successfully', '{\"old\": true}')", cid, ws)
        for i, published in enumerate((True, False, False)):
            await conn.execute("INSERT INTO memory_worker.outbox (command_id, subject, headers, payload, published_at)"
                               " VALUES ($1, $2, $3::jsonb, '{}', CASE WHEN $4 THEN now() END)",
                               cid, subjects.saved_subject("server", ws), json.dumps({"Nats-Msg-Id": f"{cid}:{i}"}),
                               published)
        before = await _schema(conn)

        with pytest.raises(asyncpg.RaiseError, match="2 events .* still unpublished") as refused:
            await migrate.migrate_dsn(dsn)
        assert "deploy/README.md" in (refused.value.hint or "")
        assert await _schema(conn) == before

        # What the previous release's start-up does with them; then 009 applies.
        await conn.execute("UPDATE memory_worker.outbox SET published_at = now()")
        assert await migrate.migrate_dsn(dsn) == NINE
        assert await conn.fetchval("SELECT to_regclass('memory_worker.outbox')") is None
    finally:
        await conn.close()


async def test_a_create_stored_before_009_is_answered_with_its_stored_bytes(pg_server, monkeypatch):
    dsn = await migrated_before(pg_server, monkeypatch, 9)
    cid, ws = unique("c-"), unique()
    # As 008's memory_create_batch stored a save, applied by the delivery of stream sequence 5:
    # its result as sent (json keeps the text), its event facts, no events.
    stored_text = json.dumps({"command_id": cid, "success": True, "data": {
        "status": "memory_saved_successfully", "memory_id": 12, "content_saved": "said before"}},
        separators=(", ", ": "))
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result, event_facts,"
            " applied_by) VALUES ($1, 'create', $2, 'memory_saved_successfully', $3::json, NULL, 5)",
            cid, ws, stored_text)
        assert await migrate.migrate_dsn(dsn) == NINE
    finally:
        await conn.close()

    cmd = msgspec.json.decode(create_bytes(create_fields(ws, "said before"), command_id=cid, reply_to=None),
                              type=CreateMemory)
    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        repo = MemoryRepository(pool)
        stored = await repo.stored_command(cid, ws)  # what the result lookup reads
        assert stored is not None and stored.decision is None
        assert answer(stored).result == stored_text.encode()
        repeat = await CreateMemoryService(repo, Limits()).run(cmd, delivery=9)
        assert repeat.duplicate and repeat.answer.result == stored_text.encode() and repeat.events == []
        assert await pool.fetchval("SELECT count(*) FROM server_memories") == 0  # nothing saved again
    finally:
        await pool.close()

    with capture_logs() as logs:
        redelivered = seen_before(cmd, stored, "", delivery=5)
    assert redelivered.answer.result == stored_text.encode() and redelivered.events == []
    assert [entry["event"] for entry in logs] == ["events_not_rebuilt"]
