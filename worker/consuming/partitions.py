"""Partition consumers: each partition is pulled by one replica at a time, several commands
in hand, each workspace's commands run one at a time in stream order.

Why several in hand: one command at a time per partition made every create wait for a
fetch round trip, its batch, the events' flush and the acknowledgement before the next
could start; the machine sat a quarter idle. With IN_FLIGHT commands in hand, commands of
different workspaces of a partition run side by side (and share batches, worker/shared/coalescer.py).

The order rules, and what keeps each:
- One replica per partition: the consumer is a pinned_client priority group
  (worker/consuming/streams.py); the server delivers only to the pinned replica and moves the pin
  only after it stopped pulling for PIN_TIMEOUT_S.
- A workspace's commands run one at a time, in delivery order: one lane per workspace.
- A command handed back for a later attempt (a nak with delay) blocks its lane. The
  workspace's later commands wait in hand until it comes back.
- Commands in hand, running or waiting, are refreshed with in-progress acks well within
  ack_wait, so the server redelivers none of them elsewhere while this replica is alive.
- A replica that loses its partition (the server answers a pull with 423, wrong pin) or
  stops lets the command each lane is running finish and hands every other one back at once.
- Replicas share the partitions: one that holds more than its share (partitions / replicas,
  the replica count read from the pull requests waiting on its partitions, steady over three
  rounds) gives one away per round, only where another replica is waiting, and does not pull
  it again for YIELD_S.
- A replica newly pinned to a partition runs nothing until every command of the partition
  pending at the server is in its hands (a previous holder's come back after a nak or after
  its ack_wait), then all of them in stream order. So whatever order the previous holder
  left them in, the new one restores stream order before running any.
- A delivery that never arrives (in a cluster: lost with the NATS node it was routed
  through, while the replica keeps its pin) shows as a hole in the server's delivery
  numbers (consumer sequence). The server redelivers it only after ack_wait, having
  delivered later ones meanwhile: the replica catches up as after a takeover.

nats-py directly, and pull requests written by hand: nats-py has no priority groups, and
its fetch waits to fill a batch, where this loop runs each command the moment it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable

import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import subjects
from worker.consuming import streams
from worker.consuming.partition import Partition

log = structlog.get_logger("worker")

CRASH_RETRY_DELAY_S = 5.0
BALANCE_EVERY_S = 5.0
# A partition given away is not pulled for this long, so a waiting replica takes it; after it,
# this replica waits for it again (standing by, should its new holder stop).
YIELD_S = 30.0

# Returns True when the command went back to the server for a later attempt (nak).
Handler = Callable[[Msg], Awaitable[bool | None]]


def _tracer():
    """Spans for every consumed command when the `otel` extra is installed (the process's
    tracer provider decides where they go)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("memory-worker")


async def _quietly(ack: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):  # gone or reconnecting: ack_wait decides then
        await ack


class PartitionConsumers:
    def __init__(self, js: JetStreamContext, nc: NatsClient, handler: Handler, partitions: int, *,
                 in_flight: int = streams.DEFAULT_IN_FLIGHT, ack_wait_s: float = 60.0,
                 crash_retry_delay: float = CRASH_RETRY_DELAY_S, balance_every_s: float = BALANCE_EVERY_S,
                 yield_s: float = YIELD_S, domain: str | None = None) -> None:
        self.js = js
        self.domain = domain  # the JetStream domain `js` was made for, if any
        self.nc = nc  # the connection `js` was made from: the pulls and unpins are requests of their own
        self.in_flight = in_flight
        self.ack_wait_s = ack_wait_s
        self.stopping = False
        self._crash_retry_delay = crash_retry_delay
        self._balance_every_s = balance_every_s
        self._yield_s = yield_s
        self._replica_counts: deque[int] = deque(maxlen=3)
        self._handler = handler
        # The unplaced commands' consumer (None) is pulled like a partition: they are dead-lettered.
        self._partitions = [Partition(self, p) for p in [*range(partitions), None]]
        self._background: set[asyncio.Task] = set()
        self._naks: set[asyncio.Task] = set()  # hand-backs, which stop() lets go out
        self._stop_task: asyncio.Task | None = None
        self._tracer = _tracer()

    async def start(self) -> None:
        for partition in self._partitions:
            await partition.start()
        self.spawn(self._keep_in_hand(), "partition-refresh")
        self.spawn(self._balance(), "partition-balance")

    def spawn(self, coro, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def nak_soon(self, msg: Msg, delay: float | None = None) -> None:
        task = asyncio.create_task(_quietly(msg.nak(delay=delay)))
        self._naks.add(task)
        task.add_done_callback(self._naks.discard)

    async def stop(self, timeout: float) -> None:
        """Take no new command; hand back those in hand that are not running and let the
        running ones finish (up to `timeout`), then cancel. Idempotent: the worker calls it
        on the way out and again from its exit stack; a second call waits for the first."""
        if self._stop_task is None:
            self.stopping = True
            self._stop_task = asyncio.create_task(self._stop(timeout), name="partitions-stop")
        await asyncio.shield(self._stop_task)

    async def _stop(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pulls = [p.pull_task for p in self._partitions if p.pull_task is not None]
        if pulls:
            await asyncio.wait(pulls, timeout=timeout)
        drains = [asyncio.create_task(p.drain()) for p in self._partitions]
        if drains:
            _, pending = await asyncio.wait(drains, timeout=max(deadline - time.monotonic(), 0.1))
            if pending:
                for partition in self._partitions:
                    partition.cancel()
                await asyncio.gather(*drains, return_exceptions=True)
        for task in pulls:
            task.cancel()
        await asyncio.gather(*pulls, return_exceptions=True)
        # The hand-back naks go out before the subscriptions (and later the connection) close.
        if self._naks:
            await asyncio.wait(set(self._naks), timeout=5)
        background = list(self._background)
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        for partition in self._partitions:
            await partition.close()

    async def _keep_in_hand(self) -> None:
        """Commands in hand are refreshed well within ack_wait, so the server
        redelivers none of them (elsewhere, out of order) while this replica is alive."""
        while not self.stopping:
            await asyncio.sleep(self.ack_wait_s / 3)
            for partition in self._partitions:
                for msg in partition.in_hand():
                    await _quietly(msg.in_progress())
                await partition.unblock_vanished()

    async def _balance(self) -> None:
        while not self.stopping:
            await asyncio.sleep(self._balance_every_s)
            try:
                await self._balance_once()
            except Exception as exc:  # NATS away: try again next round
                log.warning("balance_failed", error=repr(exc))

    async def _balance_once(self) -> None:
        # The unplaced commands' consumer (last) is rarely busy: only partitions are balanced.
        partitions = self._partitions[:-1]
        held = [p for p in partitions if p.holds]
        if len(held) < 2:
            self._replica_counts.clear()
            return
        waiting = []
        for partition in held:
            info = await self.js.consumer_info(subjects.COMMANDS_STREAM, partition.durable)
            waiting.append((partition, info.num_waiting))
        # Every replica keeps a pull waiting on every partition it may take, this one included.
        # The count must hold for a few rounds (a pull between two requests is not counted; a
        # stray puller must not make replicas give partitions away for ever); and one partition
        # moves per round, as each move costs its commands a hand-back and a catch-up.
        self._replica_counts.append(max(n for _, n in waiting))
        if len(self._replica_counts) < self._replica_counts.maxlen:
            return
        replicas = min(self._replica_counts)
        share = math.ceil(len(partitions) / max(replicas, 1))
        spare = [partition for partition, n in waiting if n >= 2]  # someone else is waiting
        if len(held) > share and spare:
            self._replica_counts.clear()
            await spare[0].give_away(self._yield_s)

    async def handle(self, msg: Msg) -> bool:
        try:
            if self._tracer is None:
                return bool(await self._handler(msg))
            with self._tracer.start_as_current_span(f"{msg.subject} process", attributes={
                    "messaging.system": "nats", "messaging.destination.name": msg.subject}):
                return bool(await self._handler(msg))
        except Exception:
            # A bug outside the handler's own failure paths: say so loudly, and hand the
            # message back for a retry rather than leave it unacknowledged until ack_wait.
            log.exception("handler_crashed", subject=msg.subject)
            if msg.is_acked:  # it failed after settling: nothing comes back, nothing to wait for
                return False
            await _quietly(msg.nak(delay=self._crash_retry_delay))
            return True
