"""Delivery under failure, over NATS: a publish failing after commit, a blocked partition, a
re-send after a dead letter, and the inbox's workspace scoping."""

from __future__ import annotations

import asyncio
from collections import Counter

import msgspec
import pytest

from contracts import subjects
from contracts.kinds.create import DB_ERROR, SAVED
from contracts.result_parts import COMMAND_INVALID
from tests.e2e.bus import create_fields, read_stream, unique
from tests.e2e.directory import server_memories
from tests.support.directory import add_server
from tests.support.partitions import partition_of
from tests.support.waiting import wait_until
from worker.client.memory_client import new_create
from worker.consuming.administration import streams

E2E_PARTITIONS = 4


async def _events_stream_without(js, removed: str) -> None:
    config = streams.events_stream()
    config.subjects = [s for s in config.subjects if s != removed]
    await js.update_stream(config)


async def test_events_failing_after_commit_are_published_once_in_order_when_the_stream_is_back(
        e2e_worker, memory, nc, bot_db):
    js = nc.jetstream()
    ws = unique()
    await add_server(bot_db, ws)
    log_start = len(e2e_worker.log_text())
    await _events_stream_without(js, "memory.saved.>")
    try:
        pending = asyncio.create_task(memory.create(create_fields(ws, "saved while events are down"), timeout=30))
        # The save commits; publishing memory.saved finds no stream, and the worker waits
        # that out (retrying, not counting it as the command's failure).
        await wait_until(lambda: "waiting_for_dependency" in e2e_worker.log_text()[log_start:], timeout=15)
        rows = await server_memories(bot_db, ws)
        assert [r["content"] for r in rows] == ["saved while events are down"]
        assert not pending.done()
    finally:
        await js.update_stream(streams.events_stream())
    result = await pending

    assert result.data.status == SAVED
    assert len(await server_memories(bot_db, ws)) == 1
    wanted = [subjects.invalidate_subject("tomori_state", ws), subjects.saved_subject("server", ws)]
    events = await read_stream(nc, subjects.EVENTS_STREAM, wanted)
    assert [m.subject for m in events] == wanted  # the invalidation first, each once
    assert Counter(m.headers["Nats-Msg-Id"] for m in events).most_common(1)[0][1] == 1
    assert msgspec.json.decode(events[1].data)["memory_id"] == result.data.memory_id


def _workspace_in_other_partition(than: str) -> str:
    blocked = partition_of(subjects.encode_token(than), E2E_PARTITIONS)
    while True:
        ws = unique()
        if partition_of(subjects.encode_token(ws), E2E_PARTITIONS) != blocked:
            return ws


async def test_a_blocked_partition_does_not_hold_up_the_others(e2e_worker, memory, bot_db):
    blocked_ws = unique()
    others = [_workspace_in_other_partition(blocked_ws) for _ in range(6)]
    for ws in (blocked_ws, *others):
        await add_server(bot_db, ws)
    async with bot_db.acquire() as conn:
        holder = conn.transaction()
        await holder.start()
        await conn.execute("SELECT memory_lock_owner('server', $1)", blocked_ws)
        blocked = asyncio.create_task(memory.create(create_fields(blocked_ws, "waits for the lock"), timeout=30))
        done = await asyncio.gather(*(memory.create(create_fields(ws, "goes ahead")) for ws in others))
        assert {r.data.status for r in done} == {SAVED}
        assert not blocked.done()
        await holder.rollback()
    assert (await blocked).data.status == SAVED


async def test_a_result_is_only_looked_up_from_its_own_workspace(e2e_worker, memory, nc):
    ws, other = unique(), unique()
    cmd = new_create(**create_fields(ws, "private to its workspace"), reply_to=memory.reply_subject())
    await memory.create(cmd)

    own = await nc.request(subjects.result_subject(ws, cmd.command_id), b"", timeout=5)
    foreign = await nc.request(subjects.result_subject(other, cmd.command_id), b"", timeout=5)

    assert msgspec.json.decode(own.data)["command_id"] == cmd.command_id
    assert foreign.data == b"null"


async def test_a_command_id_reused_by_another_workspace_is_refused_not_answered(e2e_worker, memory, bot_db):
    ws, other = unique(), unique()
    cid = unique("shared-")
    first = await memory.create(dict(create_fields(ws, "first owner of the id"), command_id=cid))
    # A new message id, as a different bot would send it: JetStream does not drop it.
    payload = msgspec.json.encode(new_create(**create_fields(other, "second"), command_id=cid,
                                             reply_to=(reply := memory.reply_subject())))
    raw = await memory.send_raw("create", other, payload, command_id=f"{cid}-other-bot", reply_to=reply)
    second = msgspec.json.decode(raw)

    assert first.data.status == SAVED
    assert second["data"]["status"] == COMMAND_INVALID
    assert "another workspace" in second["error"]
    assert await server_memories(bot_db, other) == []


FAIL_SWITCH = """
CREATE TABLE IF NOT EXISTS e2e_fail_switch (content text PRIMARY KEY);
CREATE OR REPLACE FUNCTION e2e_switchable_failure() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM e2e_fail_switch WHERE content = NEW.content) THEN
        RAISE EXCEPTION 'switched-on failure' USING ERRCODE = '40001';
    END IF;
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER e2e_switchable_failure BEFORE INSERT ON server_memories
    FOR EACH ROW EXECUTE FUNCTION e2e_switchable_failure();
"""


async def test_resending_a_dead_lettered_command_with_its_id_applies_it(e2e_worker, memory, bot_db):
    ws = unique()
    content = f"fails until fixed {ws}"
    await add_server(bot_db, ws)
    await bot_db.execute(FAIL_SWITCH)
    await bot_db.execute("INSERT INTO e2e_fail_switch VALUES ($1)", content)
    cmd = new_create(**create_fields(ws, content))

    failed = await memory.create(cmd, timeout=30)
    await bot_db.execute("DELETE FROM e2e_fail_switch WHERE content = $1", content)
    # The same command again, inside JetStream's duplicate window: the client sees the
    # duplicate, finds no stored result, and sends it again under a derived message id.
    retried = await memory.create(cmd, timeout=30)

    assert failed.data.status == DB_ERROR
    assert retried.data.status == SAVED
    assert [r["content"] for r in await server_memories(bot_db, ws)] == [content]


@pytest.mark.parametrize("reply_to", ["cache.invalidate.user.forged", "memory.create.someone"])
async def test_results_are_never_published_outside_reply_inboxes(e2e_worker, memory, nc, reply_to):
    ws = unique()
    received = []

    async def collect(msg):
        received.append(msg)

    sub = await nc.subscribe(reply_to, cb=collect)
    payload = msgspec.json.encode(new_create(**create_fields(ws, "x"), reply_to=reply_to))
    await memory.send_raw("create", ws, payload, command_id=unique("forged-"), reply_to=None)

    dlq = [subjects.dlq_subject(subjects.command_subject("create", ws))]

    async def dead_lettered():
        return len(await read_stream(nc, subjects.DLQ_STREAM, dlq)) == 1

    await wait_until(dead_lettered, timeout=10)
    [dead] = await read_stream(nc, subjects.DLQ_STREAM, dlq)
    await sub.unsubscribe()
    assert dead.headers["Dlq-Reason"] == "invalid_command"
    assert "reply_to must start with" in dead.headers["Dlq-Error"]
    assert received == []


async def test_stream_config_helper_round_trips(e2e_worker, nc):
    """Guard for the tests above: restoring the events stream leaves it as the worker made it."""
    info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM)
    assert sorted(info.config.subjects) == sorted(streams.events_stream().subjects)
