"""worker.partitions on a real nats-server: a delivery that never reaches the pinned replica
(in a cluster: lost with the NATS node it was routed through, while the replica keeps its
pin) must not let the workspace's later commands run before it. The server counts the lost
one as pending and redelivers it after ack_wait; the replica sees a hole in the server's
delivery numbers and waits for it (DESIGN.md guarantee 5)."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from contracts import subjects
from worker import streams
from worker.embedded import NatsServer
from worker.partitions import PartitionConsumers

from ..conftest import unique

PARTITIONS = 2
ACK_WAIT_S = 2.0


@pytest.fixture
async def server(tmp_root):
    server = NatsServer(tmp_root / f"nats-{unique()}").start()
    yield server
    server.stop()


async def test_a_delivery_lost_on_the_way_holds_its_workspace_until_it_comes_back(server):
    conn = await nats.connect(server.url)
    js = conn.jetstream()
    await streams.provision(js, partitions=PARTITIONS, ack_wait_s=ACK_WAIT_S)
    workspace = unique()
    subject = subjects.command_subject("create", workspace)
    durable = streams.partition_consumer_name(subjects.partition_of(subjects.encode_token(workspace), PARTITIONS))
    events: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
    ran: list[int] = []
    pins: list[str] = []

    async def handler(msg):
        pins.append(msg.headers["Nats-Pin-Id"])
        ran.append(int(msg.data))
        await msg.ack()
        await events.put(("ran", int(msg.data)))

    async def thief(msg):
        if msg.reply:  # a command, not a status about the pull: dropped, never acknowledged
            await events.put(("lost", int(msg.data)))

    consumers = PartitionConsumers(js, handler, PARTITIONS, ack_wait_s=ACK_WAIT_S)
    await consumers.start()
    try:
        await js.publish(subject, b"0")  # pins the partition to the replica
        assert await asyncio.wait_for(events.get(), 10) == ("ran", 0)

        # A second pull under the replica's own pin, whose deliveries go nowhere the replica
        # reads: to the server they are deliveries to the replica, as a delivery lost on a
        # route is. The server takes turns between the waiting pulls.
        inbox = conn.new_inbox()
        await conn.subscribe(inbox, cb=thief)
        await conn.publish(streams.partition_api(js, "CONSUMER.MSG.NEXT", durable), json.dumps(
            {"batch": 1, "expires": int(30e9), "group": streams.PARTITION_GROUP, "id": pins[0]}).encode(),
            reply=inbox)
        await conn.flush()
        lost, n = None, 0
        while lost is None:
            n += 1
            assert n < 20, "the second pull never got a command"
            await js.publish(subject, str(n).encode())
            what, got = await asyncio.wait_for(events.get(), 10)
            assert got == n
            if what == "lost":
                lost = n

        await js.publish(subject, str(n + 1).encode())  # the thief's pull is spent: the replica's
        while len(ran) < n + 2:  # the lost one comes back after ack_wait
            await asyncio.wait_for(events.get(), 10 * ACK_WAIT_S)
    finally:
        await consumers.stop(timeout=5)
        await conn.close()

    assert len(set(pins)) == 1  # the replica kept its pin throughout
    assert ran == list(range(n + 2))
