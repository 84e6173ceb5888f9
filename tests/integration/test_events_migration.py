"""Migrations 006 (events kept with the inbox) and 007 (a create's events rebuilt, results
stored as json) on a database an older worker used.

006: the outbox rows an older worker left unpublished (it committed, then died before
publishing) survive the migration and are published by the new worker's start-up drain, in
order and once; the command's redelivery is answered from the inbox without publishing
anything else. 007: an inbox row 006 stored (its result as jsonb, its events whole) answers
with the same bytes after the upgrade, and the redelivery of the message that applied it
publishes the events as stored."""

from __future__ import annotations

import json

import asyncpg
import msgspec
import nats
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.commands import CreateMemory
from db import migrate
from db.repository import MemoryRepository, create_pool
from tests.conftest import unique
from tests.integration.helpers import migrated_before
from tests.support import fresh_nats
from tests.support.commands import create_bytes, create_fields
from worker.consuming.administration import streams
from worker.consuming.outbox.legacy import drain_legacy_outbox
from worker.consuming.outbox.publisher import EventPublisher
from worker.services.base import seen_before

server, nc = fresh_nats.server, fresh_nats.nc


_migrated_before = migrated_before


def _from(version: int) -> list[str]:
    return [m.name for m in migrate.available() if m.version >= version]


@pytest.fixture
async def before_006(pg_server, monkeypatch):
    """A database migrated up to 005."""
    return await _migrated_before(pg_server, monkeypatch, 6)


async def test_rows_an_older_worker_left_in_the_outbox_are_published_after_the_upgrade(before_006, nc):
    dsn = before_006
    cid, ws = unique("c-"), unique()
    subjects_in_order = [subjects.invalidate_subject("tomori_state", ws), subjects.saved_subject("server", ws)]
    conn = await asyncpg.connect(dsn)
    try:
        # What 005's memory_create_save left when its worker died after the commit.
        await conn.execute("INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result)"
                           " VALUES ($1, 'create', $2, 'memory_saved_successfully', '{\"old\": true}')", cid, ws)
        for i, subject in enumerate(subjects_in_order):
            eid = f"{cid}:e{i}"
            await conn.execute("INSERT INTO memory_worker.outbox (command_id, subject, headers, payload)"
                               " VALUES ($1, $2, $3::jsonb, $4::jsonb)", cid, subject,
                               json.dumps({"Nats-Msg-Id": eid}), json.dumps({"event_id": eid, "command_id": cid}))
        assert await migrate.migrate_dsn(dsn) == _from(6)
        assert await conn.fetchval("SELECT count(*) FROM memory_worker.outbox WHERE published_at IS NULL") == 2
        assert await conn.fetchval("SELECT events IS NULL AND applied_by IS NULL FROM memory_worker.processed_commands"
                                   " WHERE command_id = $1", cid)
    finally:
        await conn.close()

    js = nc.jetstream()
    await streams.provision(js, nc, partitions=2, ack_wait_s=20)
    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        repo = MemoryRepository(pool)
        assert await drain_legacy_outbox(EventPublisher(js), repo) == 2
        assert await repo.legacy_outbox_backlog() == 0
        # The command's redelivery: answered from the inbox, nothing published again (the
        # old row names no delivery; its events were the outbox's).
        cmd = msgspec.json.decode(create_bytes(create_fields(ws), command_id=cid, reply_to=None), type=CreateMemory)
        async with repo.owner_transaction([]) as tx:
            stored = await tx.stored(cid)
        answer = seen_before(cmd, stored, "", delivery=1)
        assert answer.result == b'{"old": true}' and answer.events == []
    finally:
        await pool.close()

    sub = await js.pull_subscribe(">", stream=subjects.EVENTS_STREAM,
                                  config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
    try:
        msgs = await sub.fetch(10, timeout=5)
    except nats.errors.TimeoutError:
        msgs = []
    assert [m.subject for m in msgs] == subjects_in_order
    assert [m.headers["Nats-Msg-Id"] for m in msgs] == [f"{cid}:e0", f"{cid}:e1"]


async def test_a_row_stored_before_007_answers_as_before_and_its_redelivery_republishes_its_stored_events(
        pg_server, monkeypatch):
    dsn = await _migrated_before(pg_server, monkeypatch, 7)
    cid, ws = unique("c-"), unique()
    events = [{"subject": subjects.invalidate_subject("tomori_state", ws), "headers": {"Nats-Msg-Id": f"{cid}:i"},
               "payload": {"event_id": f"{cid}:i", "command_id": cid}},
              {"subject": subjects.saved_subject("server", ws), "headers": {"Nats-Msg-Id": f"{cid}:saved"},
               "payload": {"event_id": f"{cid}:saved", "command_id": cid, "memory_id": 12}}]
    conn = await asyncpg.connect(dsn)
    try:
        # What 006's memory_create_save stored, applied by the delivery of stream sequence 5.
        await conn.execute(
            "INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result, events,"
            " applied_by) VALUES ($1, 'create', $2, 'memory_saved_successfully', $3::jsonb, $4::jsonb, 5)",
            cid, ws, json.dumps({"command_id": cid, "success": True, "data": {"memory_id": 12}}), json.dumps(events))
        answered_before = await conn.fetchval(
            "SELECT result::text FROM memory_worker.processed_commands WHERE command_id = $1", cid)
        assert await migrate.migrate_dsn(dsn) == _from(7)
    finally:
        await conn.close()

    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        stored = await MemoryRepository(pool).stored_command(cid, ws)
    finally:
        await pool.close()
    assert stored is not None and stored.result == answered_before.encode()  # the bytes a repeat got before
    assert stored.facts is None
    cmd = msgspec.json.decode(create_bytes(create_fields(ws), command_id=cid, reply_to=None), type=CreateMemory)
    redelivered = seen_before(cmd, stored, "", delivery=5)
    assert [(e.subject, e.headers, json.loads(bytes(e.payload))) for e in redelivered.events] == [
        (e["subject"], e["headers"], e["payload"]) for e in events]
    assert seen_before(cmd, stored, "", delivery=6).events == []  # another message: nothing again
