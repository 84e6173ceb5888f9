"""`make bench-nats`: what each of a create's NATS operations costs the server, one at a time.

A fresh nats-server (`sync_interval: always`, as `make run`) with the worker's streams and
consumers (worker/consuming/administration/streams.py); each operation runs alone over N messages of the size
of a create (700 bytes) while nats-server's CPU is read from /proc, so the figures add up to
what `make bench` reports as NATS CPU per create. Operations in the order a create meets them:
the bot's publish (one by one, or in an atomic batch as MemoryClient sends commands that go out
together), the delivery and acknowledgement of a pull in the partition's priority group (on a
limits stream as now, on a work-queue stream as before; one ack each, or one for the pull's
batch with AckPolicy.ALL), the purge of what was acknowledged, the events (two per create, in
atomic batches as the event publisher sends them) and the reply.

    python -m tests.bench.nats_costs                # 4,000 messages per operation
    python -m tests.bench.nats_costs --messages 20000 --rounds 2
    python -m tests.bench.nats_costs --nats-sync default   # what is left without the fsyncs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats
from nats.js.api import AckPolicy, RetentionPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from tests.bench.cpu import process_seconds
from worker.consuming.administration import streams
from worker.consuming.administration.retention import CommandRetainer
from worker.local.embedded import NatsServer
from worker.shared import atomic, jetstream

BODY = b"x" * 700
PARTITIONS = 16
PULL_BATCH = 32


@dataclasses.dataclass
class Cost:
    operation: str
    messages: int
    cpu_us: float  # nats-server CPU per message
    rate: float


async def _measure(server: NatsServer, operation: str, messages: int, run: Callable[[], Awaitable[None]]) -> Cost:
    before, started = process_seconds(server.proc.pid), time.perf_counter()
    await run()
    elapsed = time.perf_counter() - started
    return Cost(operation, messages, (process_seconds(server.proc.pid) - before) / messages * 1e6, messages / elapsed)


async def _publish_each(js, n: int, subject_of) -> None:
    for start in range(0, n, 256):
        await asyncio.gather(*(js.publish(subject_of(i), BODY) for i in range(start, min(n, start + 256))))


async def _publish_batches(nc, n: int, size: int, subject_of) -> None:
    pending = []
    for start in range(0, n, size):
        batch = [(subject_of(i), BODY, {}) for i in range(start, min(n, start + size))]
        pending.append(atomic.publish_atomic(nc, batch, timeout=10))
        if len(pending) == 16:
            assert all(await asyncio.gather(*pending))
            pending = []
    assert all(await asyncio.gather(*pending))


async def _consume(nc, n: int, *, ack_all: bool, durable_of) -> None:
    """Pull every partition in its priority group, PULL_BATCH at a time, and acknowledge."""
    done = asyncio.Event()
    count = 0
    last: dict[int, object] = {}
    pins: dict[int, str] = {}  # a priority group serves the pulls of the pin it gave out

    async def on_msg(msg) -> None:
        nonlocal count
        if jetstream.pull_status(msg) is not None:
            return
        count += 1
        partition = int(msg.subject.split(".")[1])
        if msg.headers and msg.headers.get("Nats-Pin-Id"):
            pins[partition] = msg.headers["Nats-Pin-Id"]
        if ack_all:
            last[partition] = msg
        else:
            await msg.ack()
        if count >= n:
            done.set()

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=on_msg)

    async def pull(partition: int) -> None:
        while not done.is_set():
            await nc.publish(streams.partition_api("CONSUMER.MSG.NEXT", durable_of(partition)),
                             jetstream.pull_request(PULL_BATCH, expires_s=0.2, group=streams.PARTITION_GROUP,
                                                    pin=pins.get(partition)), reply=inbox)
            await asyncio.sleep(0.01)
            if ack_all and partition in last:
                await last.pop(partition).ack()

    pulls = [asyncio.create_task(pull(p)) for p in range(PARTITIONS)]
    await asyncio.wait_for(done.wait(), 120)
    for task in pulls:
        task.cancel()
    for msg in last.values():
        await msg.ack()
    await nc.flush()
    await sub.unsubscribe()


def _workspace(i: int) -> str:
    return subjects.command_subject("create", f"{10**17 + i % 2000}")


async def _stream(nc, js, retention: RetentionPolicy, ack: AckPolicy) -> None:
    with contextlib.suppress(NotFoundError):  # not there yet
        await js.delete_stream(subjects.COMMANDS_STREAM)
    config = streams.command_stream(PARTITIONS)
    if retention == RetentionPolicy.WORK_QUEUE:
        config = dataclasses.replace(config, retention=retention, max_age=None, max_bytes=None)
    await js.add_stream(config)
    for partition in range(PARTITIONS):
        consumer = dataclasses.replace(streams.partition_consumer(partition, ack_wait_s=30), ack_policy=ack)
        await streams.ensure_partition_consumer(nc, consumer)


async def one_round(root: Path, messages: int, sync_always: bool = True) -> list[Cost]:
    server = NatsServer(root / f"nats-{time.monotonic_ns()}", sync_always=sync_always).start()
    costs: list[Cost] = []
    nc = None
    try:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await streams.ensure_stream(js, streams.events_stream())
        for label, retention, ack in (("limits", RetentionPolicy.LIMITS, AckPolicy.EXPLICIT),
                                      ("work queue (before)", RetentionPolicy.WORK_QUEUE, AckPolicy.EXPLICIT),
                                      ("limits, AckPolicy.ALL", RetentionPolicy.LIMITS, AckPolicy.ALL)):
            await _stream(nc, js, retention, ack)
            if label == "limits":
                costs.append(await _measure(server, "command publish, one by one", messages,
                                            lambda: _publish_each(js, messages, _workspace)))
                await js.purge_stream(subjects.COMMANDS_STREAM)
                for size in (8, 32, 128):
                    costs.append(await _measure(server, f"command publish, atomic batches of {size}", messages,
                                                lambda size=size: _publish_batches(nc, messages, size, _workspace)))
                    await js.purge_stream(subjects.COMMANDS_STREAM)
                await _stream(nc, js, retention, ack)
            await _publish_batches(nc, messages, 32, _workspace)
            costs.append(await _measure(server, f"delivery and ack, {label}", messages, lambda ack=ack: _consume(
                nc, messages, ack_all=ack == AckPolicy.ALL, durable_of=streams.partition_consumer_name)))
            if label == "limits":
                costs.append(await _measure(server, "purge of what was acknowledged", messages,
                                            lambda: CommandRetainer(js, PARTITIONS).retain_once()))
        events = 2 * messages
        costs.append(await _measure(server, "events, one by one", events,
                                    lambda: _publish_each(js, events, lambda i: f"memory.saved.server.{i}")))
        for size in (16, 64):
            costs.append(await _measure(server, f"events, atomic batches of {size}", events,
                                        lambda size=size: _publish_batches(nc, events, size,
                                                                           lambda i: f"memory.saved.server.{i}")))
        costs.append(await _measure(server, "reply (core publish)", messages, lambda: _replies(nc, messages)))
    finally:
        if nc is not None:
            await nc.close()
        server.stop()
    return costs


async def _replies(nc, n: int) -> None:
    got = asyncio.Event()
    count = 0

    async def on_reply(_msg) -> None:
        nonlocal count
        count += 1
        if count >= n:
            got.set()

    inbox = nc.new_inbox()
    sub = await nc.subscribe(f"{inbox}.*", cb=on_reply)
    for i in range(n):
        await nc.publish(f"{inbox}.{i}", BODY)
    await asyncio.wait_for(got.wait(), 60)
    await sub.unsubscribe()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=4000, help="messages per operation (default 4,000)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each on a fresh server (default 2)")
    parser.add_argument("--nats-sync", choices=("always", "default"), default="always",
                        help="JetStream sync_interval: always (as make run) or nats-server's default")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nats-costs-") as tmp:
        rounds = [asyncio.run(one_round(Path(tmp), args.messages, args.nats_sync == "always"))
                  for _ in range(args.rounds)]
    print(f"nats-server CPU per message, {args.messages} messages of {len(BODY)} bytes, "
          f"sync_interval {args.nats_sync}, {args.rounds} rounds")
    print(f"{'operation':<52} " + "  ".join(f"{'µs/msg':>7} {'msg/s':>7}" for _ in rounds))
    for i, cost in enumerate(rounds[0]):
        print(f"{cost.operation:<52} " + "  ".join(f"{r[i].cpu_us:>7.1f} {r[i].rate:>7.0f}" for r in rounds))


if __name__ == "__main__":
    main()
