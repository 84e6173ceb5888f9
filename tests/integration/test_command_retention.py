"""MEMORY_COMMANDS with limits retention, on a real nats-server: an acknowledgement deletes
nothing, the purge removes exactly what every consumer acknowledged, a full stream refuses a
publish instead of dropping a command, and a work-queue stream of an older deployment is
rebuilt without losing or reordering a command."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import nats
import pytest
from nats.js.api import DiscardPolicy, RetentionPolicy, StreamConfig
from nats.js.errors import APIError, NoStreamResponseError, NotFoundError

from contracts import subjects
from tests.support import fresh_nats
from tests.support.partitions import partition_of
from tests.support.waiting import wait_until
from worker.consuming import dead_letters
from worker.consuming.administration import retention, stranded, stream_upgrade, streams
from worker.local.embedded import NatsServer
from worker.shared import jetstream

from ..conftest import clone_database, unique, worker_env

# A nats-server per test: the partition consumers are durable and shared by name.
server, nc = fresh_nats.server, fresh_nats.nc

PARTITIONS = 2


async def _provision(nc, **kw):
    js = nc.jetstream()
    await streams.provision(js, nc, partitions=PARTITIONS, ack_wait_s=20, **kw)
    return js


async def _stored(js) -> list[tuple[int, str, bytes]]:
    state = (await js.stream_info(subjects.COMMANDS_STREAM)).state
    found = []
    for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
        try:
            raw = await js.get_msg(subjects.COMMANDS_STREAM, seq)
        except NotFoundError:
            continue
        found.append((raw.seq, raw.subject, raw.data))
    return found


async def _take(nc, partition: int, n: int):
    """n deliveries of a partition, pulled in its priority group as the worker pulls."""
    durable, _ = streams.command_consumers(PARTITIONS)[partition]
    got: asyncio.Queue = asyncio.Queue()
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=got.put)
    await nc.publish(streams.partition_api("CONSUMER.MSG.NEXT", durable),
                     jetstream.pull_request(n, expires_s=5, group=streams.PARTITION_GROUP), reply=inbox)
    msgs: list = []
    while len(msgs) < n:
        msg = await asyncio.wait_for(got.get(), 10)
        if jetstream.pull_status(msg) is None:
            msgs.append(msg)
    await sub.unsubscribe()
    return msgs


def _workspace_in(partition: int) -> str:
    while True:
        workspace = unique()
        if partition_of(workspace, PARTITIONS) == partition:
            return workspace


async def test_the_stream_keeps_by_limits_and_refuses_when_full(nc):
    js = await _provision(nc, retention=streams.CommandRetention(max_age_s=3600.0, max_bytes=64 * 1024))
    config = (await js.stream_info(subjects.COMMANDS_STREAM)).config
    assert (config.retention, config.discard, config.max_age, config.max_bytes) == (
        RetentionPolicy.LIMITS, DiscardPolicy.NEW, 3600.0, 64 * 1024)
    workspace = unique()
    first = await js.publish(subjects.command_subject("create", workspace), b"0" * 1000)
    with pytest.raises(APIError) as refused:
        for i in range(100):
            await js.publish(subjects.command_subject("create", workspace), str(i).encode() * 1000)
    assert "maximum bytes" in str(refused.value).lower()
    # Nothing stored was dropped to make room: the first command is still there.
    assert (await js.get_msg(subjects.COMMANDS_STREAM, first.seq)).data == b"0" * 1000


async def test_a_size_limit_larger_than_the_servers_storage_is_refused_naming_the_setting(tmp_root, pg_server,
                                                                                          template_db):
    small = NatsServer(tmp_root / f"nats-small-{unique()}", max_file_store_mb=64).start()
    try:
        conn = await nats.connect(small.url)
        with pytest.raises(streams.StreamProvisionError, match="COMMAND_MAX_MIB=1024.*max_file_store"):
            await _provision(conn)
        # `memoryctl run` stops there, saying so.
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "worker.cli.memoryctl", "run"], capture_output=True, text=True,
            timeout=60, env=worker_env(small.url, await clone_database(pg_server, template_db)))
        assert done.returncode == 2, done.stderr[-2000:]
        assert "refusing to start: MEMORY_COMMANDS reserves its size limit, COMMAND_MAX_MIB=1024" in done.stderr
        await _provision(conn, retention=streams.CommandRetention(max_bytes=16 * 1024 * 1024))
        assert (await conn.jetstream().stream_info(subjects.COMMANDS_STREAM)).config.max_bytes == 16 * 1024 * 1024
        await conn.close()
    finally:
        small.stop()


async def test_the_purge_removes_exactly_what_each_consumer_acknowledged(nc):
    js = await _provision(nc)
    busy, idle = _workspace_in(0), _workspace_in(1)
    for i in range(4):
        await js.publish(subjects.command_subject("create", busy), f"busy-{i}".encode())
    await js.publish(subjects.command_subject("create", idle), b"idle-0")
    taken = await _take(nc, 0, 4)
    for msg in taken[:2]:
        await msg.ack_sync()
    await taken[3].ack_sync()  # the third stays in hand: the floor stops below it
    retainer = retention.CommandRetainer(js, PARTITIONS)

    backlog = await retainer.retain_once()
    left = [data for _, _, data in await _stored(js)]
    assert left == [b"busy-2", b"busy-3", b"idle-0"]
    assert backlog.unconsumed == 2  # busy-2 in hand, idle-0 waiting
    assert backlog.oldest_age_s > 0 and backlog.stream_bytes > 0  # busy-2, stored before the acks

    await taken[2].ack_sync()
    await (await _take(nc, 1, 1))[0].ack_sync()
    backlog = await retainer.retain_once()
    assert await _stored(js) == []
    assert (backlog.unconsumed, backlog.oldest_age_s) == (0, 0.0)


async def test_the_oldest_unconsumed_command_is_measured(nc):
    js = await _provision(nc)
    await js.publish(subjects.command_subject("create", _workspace_in(1)), b"waits")
    retainer = retention.CommandRetainer(js, PARTITIONS)
    first = await retainer.retain_once()
    await wait_until(lambda: _older_than(retainer, first.oldest_age_s + 0.2), timeout=10, interval=0.1)


async def _older_than(retainer, age: float) -> bool:
    return (await retainer.retain_once()).oldest_age_s > age


async def test_a_stranded_command_is_not_purged_and_is_swept(nc):
    js = await _provision(nc)
    stranded_ack = await js.publish("memory.create.a\x7fb", b'{"command_id": "c-del"}')
    workspace = _workspace_in(0)
    await js.publish(subjects.command_subject("create", workspace), b"fine")
    await (await _take(nc, 0, 1))[0].ack_sync()
    await retention.CommandRetainer(js, PARTITIONS).retain_once()
    assert [seq for seq, _, _ in await _stored(js)] == [stranded_ack.seq]

    # Once the head has waited longer than a delivery takes, the sweep dead-letters it.
    await wait_until(lambda: _swept(js, nc), timeout=15, interval=0.5)
    letter = await js.get_last_msg(subjects.DLQ_STREAM, dead_letters.letter_subject("memory.create.a\x7fb"))
    assert letter.headers["Dlq-Reason"] == dead_letters.INVALID_COMMAND


async def _swept(js, nc) -> bool:
    await stranded.sweep_once(js, nc, ("_INBOX.",), (await js.stream_info(subjects.COMMANDS_STREAM)).state)
    return await _stored(js) == []


# -- the upgrade from a work-queue stream -------------------------------------------------------


def _work_queue(partitions: int) -> StreamConfig:
    """MEMORY_COMMANDS as deployments before limits retention created it."""
    import dataclasses

    return dataclasses.replace(streams.command_stream(partitions), retention=RetentionPolicy.WORK_QUEUE,
                               discard=DiscardPolicy.OLD, max_age=None, max_bytes=None)


async def _old_deployment(nc) -> tuple[list[tuple[str, bytes]], int]:
    """A work-queue stream with commands of three workspaces waiting (one acknowledged and so
    deleted, one sent with the bot's message id) and one under a literal wildcard subject."""
    js = nc.jetstream()
    await js.add_stream(_work_queue(PARTITIONS))
    await streams.ensure_stream(js, streams.events_stream())
    await streams.ensure_stream(js, streams.dlq_stream())
    sent = []
    for i in range(9):
        workspace = f"ws-{i % 3}"
        data = f'{{"n": {i}}}'.encode()
        await js.publish(subjects.command_subject("create", workspace), data,
                         headers={"Nats-Msg-Id": f"bot-{i}"} if i == 4 else None)
        sent.append((subjects.command_subject("create", workspace), data))
    await js.publish("memory.create.*", b'{"n": "unplaced"}')
    gone = await js.get_msg(subjects.COMMANDS_STREAM, 1)
    await js.delete_msg(subjects.COMMANDS_STREAM, gone.seq)  # what an acknowledgement did there
    last_seq = (await js.stream_info(subjects.COMMANDS_STREAM)).state.last_seq
    return sent[1:], last_seq


async def _assert_upgraded(js, sent, old_last_seq: int) -> None:
    info = await js.stream_info(subjects.COMMANDS_STREAM)
    assert info.config.retention == RetentionPolicy.LIMITS
    assert info.config.subjects == streams.COMMAND_SUBJECTS
    stored = await _stored(js)
    # Every waiting command, in the order it was stored, under the partition it had, after the
    # old stream's sequence numbers.
    assert [(subjects.original_subject(*subjects.parse_partitioned(s)), d) for _, s, d in stored] == sent
    assert all(seq > old_last_seq for seq, _, _ in stored)
    kept = await js.get_msg(subjects.COMMANDS_STREAM, stored[3][0])
    assert kept.headers.get("Nats-Msg-Id") == "bot-4"
    letter = await js.get_last_msg(subjects.DLQ_STREAM, "dlq.memory.create.%2A")
    assert letter.data == b'{"n": "unplaced"}'
    with pytest.raises(NotFoundError):
        await js.stream_info(stream_upgrade.BACKUP_STREAM)
    # The consumers deliver them, each partition its own.
    for durable, filter_subject in streams.command_consumers(PARTITIONS)[:PARTITIONS]:
        partition = int(filter_subject.split(".")[1])
        assert (await js.consumer_info(subjects.COMMANDS_STREAM, durable)).num_pending == sum(
            partition_of(s.rsplit(".", 1)[1], PARTITIONS) == partition for s, _ in sent)
    # Bots publish again: the stream takes memory.> under the same partition mapping.
    ack = await js.publish(subjects.command_subject("create", "ws-1"), b"after")
    assert ack.seq == stored[-1][0] + 1


async def test_a_work_queue_stream_is_rebuilt_with_every_waiting_command_in_order(nc):
    sent, old_last_seq = await _old_deployment(nc)
    js = await _provision(nc)
    await _assert_upgraded(js, sent, old_last_seq)


async def test_an_upgrade_cut_short_is_finished_at_the_next_start(nc):
    sent, old_last_seq = await _old_deployment(nc)
    js = nc.jetstream()
    target = streams.command_stream(PARTITIONS)
    # A worker that died after the backup: the old stream is gone, the new one not made.
    await stream_upgrade._back_up(js, target, await js.stream_info(subjects.COMMANDS_STREAM))
    with pytest.raises(NotFoundError):
        await js.stream_info(subjects.COMMANDS_STREAM)
    # Bots' publishes are refused meanwhile, not stored out of order.
    with pytest.raises(NoStreamResponseError):
        await js.publish(subjects.command_subject("create", "ws-1"), b"too early", timeout=1)
    # And one that died half-way through the restore.
    await js.add_stream(stream_upgrade.staging(target, old_last_seq + 1))
    await stream_upgrade._restore(js, subjects.COMMANDS_STREAM, nc.max_payload)
    js = await _provision(nc)
    await _assert_upgraded(js, sent, old_last_seq)
