"""worker.partitions on a real nats-server: one command at a time per partition, in order;
a handler that crashes gets its command back; stop lets the command in hand finish."""

from __future__ import annotations

import asyncio

import nats
import pytest

from contracts import subjects
from worker import streams
from worker.embedded import NatsServer
from worker.partitions import PartitionConsumers

from ..conftest import unique

PARTITIONS = 2


@pytest.fixture
async def js(tmp_root):
    # A server per test: the partition consumers are durable and shared by name.
    server = NatsServer(tmp_root / f"nats-{unique()}").start()
    client = await nats.connect(server.url)
    jsctx = client.jetstream()
    await streams.provision(jsctx, partitions=PARTITIONS, ack_wait_s=20)
    yield jsctx
    await client.close()
    server.stop()


async def _publish(js, workspace: str, n: int) -> None:
    for i in range(n):
        await js.publish(subjects.command_subject("create", workspace), str(i).encode())


async def test_each_workspace_runs_one_at_a_time_in_publish_order(js):
    seen: dict[str, list[int]] = {}
    running: set[str] = set()
    overlaps = []
    done = asyncio.Event()
    workspaces = [unique() for _ in range(4)]

    async def handler(msg):
        ws = msg.subject.rsplit(".", 1)[-1]
        partition = msg.subject.split(".")[1]
        if partition in running:
            overlaps.append(partition)
        running.add(partition)
        await asyncio.sleep(0.001)
        seen.setdefault(ws, []).append(int(msg.data))
        running.discard(partition)
        await msg.ack()
        if sum(map(len, seen.values())) == 4 * 15:
            done.set()

    consumers = PartitionConsumers(js, handler, PARTITIONS)
    await consumers.start()
    for ws in workspaces:
        await _publish(js, ws, 15)
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)

    assert overlaps == []
    for ws in workspaces:
        assert seen[subjects.encode_token(ws)] == list(range(15))


async def test_a_handler_that_crashes_gets_the_command_back(js):
    attempts = []
    done = asyncio.Event()

    async def handler(msg):
        attempts.append(msg.metadata.num_delivered)
        if len(attempts) == 1:
            raise RuntimeError("a bug outside the handler's own failure paths")
        await msg.ack()
        done.set()

    consumers = PartitionConsumers(js, handler, PARTITIONS, crash_retry_delay=0.2)
    await consumers.start()
    await _publish(js, unique(), 1)
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)
    assert attempts == [1, 2]


async def test_stop_lets_the_command_in_hand_finish(js):
    started, finished = asyncio.Event(), []

    async def handler(msg):
        started.set()
        await asyncio.sleep(0.5)
        await msg.ack_sync()
        finished.append(int(msg.data))

    consumers = PartitionConsumers(js, handler, PARTITIONS)
    await consumers.start()
    await _publish(js, unique(), 3)
    await asyncio.wait_for(started.wait(), 30)
    await consumers.stop(timeout=10)
    # The one in hand finished and was acknowledged; nothing new was taken after stop.
    assert finished == [0]
    assert (await js.stream_info(subjects.COMMANDS_STREAM)).state.messages == 2
