"""worker.consuming.intake.partitions on a real nats-server: several commands of a partition in hand, each
workspace's one at a time and in order; a command handed back holds its workspace's later
ones until it returns; one replica per partition, and a replica taking a partition over runs
the previous holder's commands first; a delivery lost on the way (in a cluster: with the NATS
node it was routed through, while the replica keeps its pin) holds its workspace until the
server redelivers it; stop finishes what is in hand."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import nats
import pytest

from contracts import subjects
from tests.support import fresh_nats
from tests.support.partitions import partition_of
from tests.support.waiting import wait_until
from worker.consuming.administration import streams
from worker.consuming.intake.partitions import PartitionConsumers
from worker.shared import jetstream

from ..conftest import unique

# A nats-server per test: the partition consumers are durable and shared by name.
server, nc = fresh_nats.server, fresh_nats.nc

PARTITIONS = 2
# Longer than a pull's expiry (worker.consuming.intake.partition.PULL_EXPIRES_S): the open pull has ended.
PULL_SETTLE_S = 1.5


@pytest.fixture
async def js(nc):
    jsctx = nc.jetstream()
    await streams.provision(jsctx, nc, partitions=PARTITIONS, ack_wait_s=20)
    return jsctx


async def _publish(js, workspace: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await js.publish(subjects.command_subject("create", workspace), str(i).encode())


def _workspace(msg) -> str:
    return subjects.decode_token(msg.subject.rsplit(".", 1)[-1])


def _partition(msg) -> str:
    return msg.subject.split(".")[1]


def _same_partition_workspaces(n: int, partition: int = 0) -> list[str]:
    found: list[str] = []
    while len(found) < n:
        ws = unique()
        if partition_of(subjects.encode_token(ws), PARTITIONS) == partition:
            found.append(ws)
    return found


async def test_each_workspace_runs_one_at_a_time_in_publish_order_and_workspaces_side_by_side(js, nc):
    seen: dict[str, list[int]] = defaultdict(list)
    running_ws: set[str] = set()
    running_per_partition: dict[str, int] = defaultdict(int)
    overlaps, side_by_side = [], []
    done = asyncio.Event()
    workspaces = [unique() for _ in range(6)]

    async def handler(msg):
        ws, partition = _workspace(msg), _partition(msg)
        if ws in running_ws:
            overlaps.append(ws)
        running_ws.add(ws)
        running_per_partition[partition] += 1
        side_by_side.append(running_per_partition[partition])
        await asyncio.sleep(0.005)
        seen[ws].append(int(msg.data))
        running_ws.discard(ws)
        running_per_partition[partition] -= 1
        await msg.ack()
        if sum(map(len, seen.values())) == 6 * 15:
            done.set()

    for ws in workspaces:  # all waiting before the consumers start: a full hand at once
        await _publish(js, ws, 15)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)

    assert overlaps == []
    for ws in workspaces:
        assert seen[ws] == list(range(15))
    assert max(side_by_side) > 1  # different workspaces of a partition did run at once


async def test_a_message_its_consumer_did_not_deliver_is_never_run_or_settled(js, nc):
    """Settling a command (ack, nak, progress) is publishing to the reply subject it carries: a
    partition runs and settles only its consumer's deliveries (contracts/subjects.py,
    is_ack_subject), whatever else reaches its inbox (issue 35)."""
    ran: list[bytes] = []
    trap, trapped = f"trap.{unique()}", []

    async def handler(msg):
        ran.append(msg.data)
        await msg.ack()
        return False

    async def caught(msg) -> None:
        trapped.append(msg.subject)

    await nc.subscribe(f"{trap}.>", cb=caught)
    [ws] = _same_partition_workspaces(1)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS)
    await consumers.start()
    try:
        await _publish(js, ws, 1)
        await wait_until(lambda: ran == [b"0"], timeout=10)
        partition = consumers._partitions[0]
        # (A reply shaped like an ack subject, $JS.ACK.>, nats-server refuses from any client.)
        for reply in (f"{trap}.plain", f"$JS.API.STREAM.PURGE.{subjects.COMMANDS_STREAM}"):
            await nc.publish(partition._inbox, b"forged", reply=reply)
        await _publish(js, ws, 1, start=1)  # delivered on the same inbox after them
        await wait_until(lambda: b"1" in ran, timeout=10)
    finally:
        await consumers.stop(timeout=5)  # what is in hand and not running is handed back (a nak)
    await nc.flush()
    assert ran == [b"0", b"1"] and trapped == []
    assert (await js.stream_info(subjects.COMMANDS_STREAM)).state.messages == 2  # nothing purged


async def test_a_handled_back_command_holds_its_workspace_and_not_the_others(js, nc):
    blocked_ws, other_ws = _same_partition_workspaces(2)
    order: list[tuple[str, int, int]] = []
    done = asyncio.Event()

    async def handler(msg):
        ws, n = _workspace(msg), int(msg.data)
        order.append((ws, n, msg.metadata.num_delivered))
        if ws == blocked_ws and n == 0 and msg.metadata.num_delivered == 1:
            await msg.nak(delay=1.0)  # as the command handler does for a transient failure
            return True
        await msg.ack()
        if len({(w, i) for w, i, _ in order}) == 10:
            done.set()
        return False

    await _publish(js, blocked_ws, 5)
    await _publish(js, other_ws, 5)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)

    blocked = [(n, d) for w, n, d in order if w == blocked_ws]
    assert blocked == [(0, 1), (0, 2), (1, 1), (2, 1), (3, 1), (4, 1)]
    # The other workspace of the same partition was not held: it finished while 0 was away.
    assert [n for w, n, _ in order if w == other_ws] == [0, 1, 2, 3, 4]
    assert order.index((other_ws, 4, 1)) < order.index((blocked_ws, 0, 2))


async def test_a_handler_that_crashes_gets_the_command_back_before_the_workspace_goes_on(js, nc):
    attempts = []
    done = asyncio.Event()

    async def handler(msg):
        attempts.append((int(msg.data), msg.metadata.num_delivered))
        if len(attempts) == 1:
            raise RuntimeError("a bug outside the handler's own failure paths")
        await msg.ack()
        if len(attempts) == 3:
            done.set()

    await _publish(js, unique(), 2)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS, crash_retry_delay=0.2)
    await consumers.start()
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)
    assert attempts == [(0, 1), (0, 2), (1, 1)]


async def test_stop_takes_no_new_command(js, nc):
    finished = []
    three = asyncio.Event()

    async def handler(msg):
        await msg.ack_sync()
        finished.append(int(msg.data))
        if len(finished) == 3:
            three.set()

    workspace = unique()
    await _publish(js, workspace, 3)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(three.wait(), 30)
    await consumers.stop(timeout=10)
    await _publish(js, workspace, 1, start=3)
    await asyncio.sleep(PULL_SETTLE_S)
    assert finished == [0, 1, 2]
    waiting = [await js.consumer_info(subjects.COMMANDS_STREAM, name) for name, _ in streams.command_consumers(PARTITIONS)]
    assert (sum(c.num_pending for c in waiting), sum(c.num_ack_pending for c in waiting)) == (1, 0)


async def test_one_replica_per_partition_and_a_takeover_runs_the_previous_holders_commands_first(server):
    """Replica A takes every partition and dies holding commands; B, pulling all along, gets
    nothing until the pin moves to it, then runs A's commands before the ones behind them."""
    a_conn, b_conn = await nats.connect(server.url), await nats.connect(server.url)
    js_a, js_b = a_conn.jetstream(), b_conn.jetstream()
    await streams.provision(js_a, a_conn, partitions=PARTITIONS, ack_wait_s=3, pin_timeout_s=2)
    workspaces = _same_partition_workspaces(3)
    a_took, b_ran = [], []
    a_holds = asyncio.Event()
    done = asyncio.Event()

    async def replica_a(msg):
        a_took.append((_workspace(msg), int(msg.data)))
        if int(msg.data) >= 2:
            a_holds.set()
            await asyncio.Event().wait()  # hangs: dies with these in hand
        await msg.ack_sync()

    async def replica_b(msg):
        b_ran.append((_workspace(msg), int(msg.data)))
        await msg.ack()
        if len(b_ran) == 3 * 6 - 3 * 2:
            done.set()

    a = PartitionConsumers(js_a, a_conn, replica_a, PARTITIONS, ack_wait_s=3)
    await a.start()
    for ws in workspaces:
        await _publish(js_a, ws, 3)
    await asyncio.wait_for(a_holds.wait(), 30)
    b = PartitionConsumers(js_b, b_conn, replica_b, PARTITIONS, ack_wait_s=3)
    await b.start()
    await _publish(js_b, workspaces[0], 1, start=3)

    def a_has_it() -> bool:
        return (workspaces[0], 3) in {(_workspace(m), int(m.data)) for part in a._partitions for m in part.in_hand()}

    # Command 3 went to A, B pulling all along: A still holds the partition, B got nothing.
    await wait_until(a_has_it, timeout=15, what="command 3 in A's hands")
    assert b_ran == []

    # A dies: no more pulls, no acks; its commands in hand come back after ack_wait (3 s),
    # after the pin has moved to B (2 s) and newer commands are waiting for B.
    a.stopping = True
    for task in a._background:
        task.cancel()
    await a_conn.close()
    await _publish(js_b, workspaces[0], 2, start=4)
    for ws in workspaces[1:]:
        await _publish(js_b, ws, 3, start=3)
    await asyncio.wait_for(done.wait(), 30)
    await b.stop(timeout=5)
    await b_conn.close()

    for ws in workspaces:
        assert [n for w, n in a_took if w == ws] == [0, 1, 2]
        assert [n for w, n in b_ran if w == ws] == [2, 3, 4, 5]


async def test_stop_hands_back_the_commands_not_running_and_they_come_back_in_order(js, nc):
    # An hour's ack_wait: within this test a command comes back only if it was handed back.
    await streams.provision(js, nc, partitions=PARTITIONS, ack_wait_s=3600)
    release, started = asyncio.Event(), asyncio.Event()
    first: list[int] = []

    async def slow(msg):
        first.append(int(msg.data))
        started.set()
        await release.wait()
        await msg.ack_sync()

    workspace = unique()
    await _publish(js, workspace, 3)
    consumers = PartitionConsumers(js, nc, slow, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(started.wait(), 30)
    stopping = asyncio.create_task(consumers.stop(timeout=10))
    await asyncio.sleep(PULL_SETTLE_S)  # the pull has ended and 1 and 2 went back
    release.set()
    await stopping
    assert first == [0]

    again: list[tuple[int, int]] = []
    back = asyncio.Event()

    async def record(msg):
        again.append((int(msg.data), msg.metadata.num_delivered))
        await msg.ack()
        if len(again) == 2:
            back.set()

    successor = PartitionConsumers(js, nc, record, PARTITIONS)
    await successor.start()
    await asyncio.wait_for(back.wait(), 30)
    await successor.stop(timeout=5)
    assert again == [(1, 2), (2, 2)]


async def test_a_handler_that_fails_after_settling_does_not_hold_its_workspace(js, nc):
    attempts = []
    done = asyncio.Event()

    async def handler(msg):
        attempts.append((int(msg.data), msg.metadata.num_delivered))
        await msg.ack()
        if int(msg.data) == 0:
            raise RuntimeError("a bug after the ack")
        done.set()

    await _publish(js, unique(), 2)
    consumers = PartitionConsumers(js, nc, handler, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(done.wait(), 15)
    await consumers.stop(timeout=5)
    assert attempts == [(0, 1), (1, 1)]


async def test_a_replica_that_loses_its_partition_hands_its_commands_over_in_order(server):
    a_conn, b_conn = await nats.connect(server.url), await nats.connect(server.url)
    js_a, js_b = a_conn.jetstream(), b_conn.jetstream()
    await streams.provision(js_a, a_conn, partitions=PARTITIONS, ack_wait_s=20)
    workspaces = _same_partition_workspaces(2)
    ran: list[tuple[str, str, int]] = []
    three_done, all_done = asyncio.Event(), asyncio.Event()

    def replica(name):
        async def handler(msg):
            await asyncio.sleep(0.2)
            ran.append((name, _workspace(msg), int(msg.data)))
            await msg.ack()
            if len(ran) == 3:
                three_done.set()
            if len(ran) == 2 * 15:
                all_done.set()
        return handler

    for ws in workspaces:
        await _publish(js_a, ws, 10)
    a = PartitionConsumers(js_a, a_conn, replica("a"), PARTITIONS)
    await a.start()
    await asyncio.wait_for(three_done.wait(), 30)
    b = PartitionConsumers(js_b, b_conn, replica("b"), PARTITIONS)
    await b.start()
    # An operator (or the server, after a stalled replica) moves the partition.
    unpin = await a_conn.request(
        f"$JS.API.CONSUMER.UNPIN.{subjects.COMMANDS_STREAM}.{streams.partition_consumer_name(0)}",
        json.dumps({"group": streams.PARTITION_GROUP}).encode(), timeout=5)
    assert "error" not in json.loads(unpin.data)
    for ws in workspaces:  # the next delivery picks the new holder
        await _publish(js_a, ws, 5, start=10)
    await asyncio.wait_for(all_done.wait(), 30)
    await a.stop(timeout=5)
    await b.stop(timeout=5)
    await a_conn.close()
    await b_conn.close()

    assert {replica for replica, _, _ in ran} == {"a", "b"}  # the partition did move
    for ws in workspaces:
        assert [n for _, w, n in ran if w == ws] == list(range(15))


async def test_replicas_share_the_partitions_and_order_holds_while_one_moves(server):
    a_conn, b_conn = await nats.connect(server.url), await nats.connect(server.url)
    js_a, js_b = a_conn.jetstream(), b_conn.jetstream()
    await streams.provision(js_a, a_conn, partitions=PARTITIONS, ack_wait_s=20)
    workspaces = _same_partition_workspaces(4, 0) + _same_partition_workspaces(4, 1)
    ran: list[tuple[str, str, str, int]] = []
    total = len(workspaces) * 45
    all_done = asyncio.Event()

    def replica(name):
        async def handler(msg):
            await asyncio.sleep(0.005)
            ran.append((name, _partition(msg), _workspace(msg), int(msg.data)))
            await msg.ack()
            if len(ran) == total:
                all_done.set()
        return handler

    a = PartitionConsumers(js_a, a_conn, replica("a"), PARTITIONS, balance_every_s=0.5, yield_s=3)
    b = PartitionConsumers(js_b, b_conn, replica("b"), PARTITIONS, balance_every_s=0.5, yield_s=3)
    await a.start()
    for ws in workspaces:
        await _publish(js_a, ws, 5)
    await wait_until(lambda: all(part.holds for part in a._partitions[:-1]), timeout=15,
                     what="A holding both partitions")
    await b.start()
    for n in range(5, 45):  # commands keep coming while a partition moves to B
        for ws in workspaces:
            await _publish(js_a, ws, 1, start=n)
        await asyncio.sleep(0.1)
    await asyncio.wait_for(all_done.wait(), 30)
    await a.stop(timeout=5)
    await b.stop(timeout=5)
    await a_conn.close()
    await b_conn.close()

    last_holder = {partition: replica for replica, partition, _, _ in ran}
    assert sorted(last_holder.values()) == ["a", "b"]  # each replica ended with one partition
    for ws in workspaces:
        assert [n for _, _, w, n in ran if w == ws] == list(range(45))


async def test_a_command_running_longer_than_ack_wait_is_not_delivered_again(server):
    conn = await nats.connect(server.url)
    js = conn.jetstream()
    await streams.provision(js, conn, partitions=PARTITIONS, ack_wait_s=2)
    calls = []
    done = asyncio.Event()

    async def slow(msg):
        calls.append(int(msg.data))
        if int(msg.data) == 0:
            await asyncio.sleep(5)  # two and a half ack_waits
        await msg.ack_sync()
        if len(calls) >= 2:
            done.set()

    workspace = unique()
    await _publish(js, workspace, 2)
    consumers = PartitionConsumers(js, conn, slow, PARTITIONS, ack_wait_s=2)
    await consumers.start()
    await asyncio.wait_for(done.wait(), 30)
    await consumers.stop(timeout=5)
    info = await js.consumer_info(subjects.COMMANDS_STREAM,
                                  streams.partition_consumer_name(partition_of(
                                      subjects.encode_token(workspace), PARTITIONS)))
    await conn.close()
    assert calls == [0, 1]
    assert info.delivered.consumer_seq == 2  # one delivery each: refreshed while it ran


# Short: the lost delivery comes back after it.
LOST_ACK_WAIT_S = 2.0


async def test_a_delivery_lost_on_the_way_holds_its_workspace_until_it_comes_back(server):
    conn = await nats.connect(server.url)
    js = conn.jetstream()
    await streams.provision(js, conn, partitions=PARTITIONS, ack_wait_s=LOST_ACK_WAIT_S)
    workspace = unique()
    subject = subjects.command_subject("create", workspace)
    durable = streams.partition_consumer_name(partition_of(subjects.encode_token(workspace), PARTITIONS))
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

    consumers = PartitionConsumers(js, conn, handler, PARTITIONS, ack_wait_s=LOST_ACK_WAIT_S)
    await consumers.start()
    try:
        await js.publish(subject, b"0")  # pins the partition to the replica
        assert await asyncio.wait_for(events.get(), 10) == ("ran", 0)

        # A second pull under the replica's own pin, whose deliveries go nowhere the replica
        # reads: to the server they are deliveries to the replica, as a delivery lost on a
        # route is. The server takes turns between the waiting pulls.
        inbox = conn.new_inbox()
        await conn.subscribe(inbox, cb=thief)
        await conn.publish(streams.partition_api("CONSUMER.MSG.NEXT", durable), jetstream.pull_request(
            1, expires_s=30, group=streams.PARTITION_GROUP, pin=pins[0]), reply=inbox)
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
            await asyncio.wait_for(events.get(), 10 * LOST_ACK_WAIT_S)
    finally:
        await consumers.stop(timeout=5)
        await conn.close()

    assert len(set(pins)) == 1  # the replica kept its pin throughout
    assert ran == list(range(n + 2))
