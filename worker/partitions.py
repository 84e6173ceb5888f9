"""Partition consumers: each partition is pulled by one replica at a time, several commands
in hand, each workspace's commands run one at a time in stream order.

Why several in hand: one command at a time per partition made every create wait for a
fetch round trip, its batch, the events' flush and the acknowledgement before the next
could start; the machine sat a quarter idle. With IN_FLIGHT commands in hand, commands of
different workspaces of a partition run side by side (and share batches, worker/coalescer.py).

The order rules, and what keeps each:
- One replica per partition: the consumer is a pinned_client priority group
  (worker/streams.py); the server delivers only to the pinned replica and moves the pin
  only after it stopped pulling for PIN_TIMEOUT_S.
- A workspace's commands run one at a time, in delivery order: one lane per workspace.
- A command handed back for a later attempt (a nak with delay) blocks its lane. The
  workspace's later commands wait in hand, refreshed with in-progress acks so that, should
  this replica die, they are redelivered after the blocked one, not before; the lane runs
  again when the blocked command comes back.
- A replica newly pinned to a partition whose commands are still pending elsewhere (a
  previous holder that died or lost the pin) runs nothing until they have all come to it
  (the consumer's ack-pending count equals what it holds), then everything in stream order.

nats-py directly, and pull requests written by hand: nats-py has no priority groups, and
its fetch waits to fill a batch, where this loop runs each command the moment it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable

import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import subjects
from worker import streams

log = structlog.get_logger("worker")

# How long a pull waits at the server; also about how long stop() waits for an idle pull.
PULL_EXPIRES_S = 1.0
# A pull that got no answer at all for this long (a server restart) is replaced.
PULL_STALLED_S = PULL_EXPIRES_S + 4.0
CRASH_RETRY_DELAY_S = 5.0
CATCH_UP_POLL_S = 1.0
# A blocked command that has not come back after its longest retry delay plus ack_wait was
# removed from the stream (an operator purge): its lane stops waiting for it.
BLOCK_LIMIT_EXTRA_S = 40.0

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


def _seq(msg: Msg) -> int:
    return msg.metadata.sequence.stream


class _Lane:
    """One workspace's commands in hand, run one at a time."""

    __slots__ = ("queue", "running", "blocked_seq", "blocked_until")

    def __init__(self) -> None:
        self.queue: deque[Msg] = deque()
        self.running = False
        self.blocked_seq: int | None = None
        self.blocked_until = 0.0


class _Partition:
    def __init__(self, owner: PartitionConsumers, partition: int) -> None:
        self._owner = owner
        self._partition = partition
        self._durable = streams.partition_consumer_name(partition)
        self._next_subject = f"{owner.js._prefix}.CONSUMER.MSG.NEXT.{subjects.COMMANDS_STREAM}.{self._durable}"
        self._inbox = owner.nc.new_inbox()
        self._sub = None
        self._pin: str | None = None
        self._remaining = 0  # messages the open pull may still bring
        self._pull_ended = asyncio.Event()
        self._pause = 0.0
        self._lanes: dict[str, _Lane] = {}
        self._lane_tasks: set[asyncio.Task] = set()
        self._mine: set[int] = set()  # stream sequences this replica holds or will get back
        self._held: list[Msg] | None = None  # while catching up after taking the partition over
        self.pull_task: asyncio.Task | None = None

    async def start(self) -> None:
        self._sub = await self._owner.nc.subscribe(self._inbox, cb=self._on_msg)
        self.pull_task = asyncio.create_task(self._pull_loop(), name=f"partition-{self._partition}")

    # -- pulling --------------------------------------------------------------------------

    async def _pull_loop(self) -> None:
        nc = self._owner.nc
        batch = self._owner.in_flight
        while not self._owner.stopping:
            request = {"batch": batch, "expires": int(PULL_EXPIRES_S * 1e9), "group": streams.PARTITION_GROUP}
            if self._pin is not None:
                request["id"] = self._pin
            self._remaining = batch
            self._pull_ended.clear()
            try:
                await nc.publish(self._next_subject, json.dumps(request).encode(), reply=self._inbox)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._pull_ended.wait(), PULL_STALLED_S)
            except Exception as exc:  # reconnecting: commands wait in JetStream meanwhile
                if self._owner.stopping:
                    return
                log.warning("pull_failed", partition=self._partition, error=repr(exc))
                self._pause = 1.0
            if self._pause:
                await asyncio.sleep(self._pause)
                self._pause = 0.0

    async def _on_msg(self, msg: Msg) -> None:
        if not msg.reply:  # a status from the server about the pull, not a command
            self._on_status(msg)
            return
        pin = msg.headers.get("Nats-Pin-Id") if msg.headers else None
        if pin is not None and pin != self._pin:
            self._pin = pin
            self._take_over()
        self._remaining -= 1
        if self._remaining <= 0:
            self._pull_ended.set()
        self._mine.add(_seq(msg))
        if self._held is not None:
            self._held.append(msg)
        else:
            self._dispatch(msg)

    def _on_status(self, msg: Msg) -> None:
        status = (msg.headers or {}).get("Status", "")
        if status == "100":  # heartbeat
            return
        if status == "423":  # another replica holds the partition now
            if self._pin is not None:
                log.info("partition_released", partition=self._partition)
                self._release_blocked()
            self._pin = None
        elif status not in ("404", "408"):
            # 409: leadership change, consumer deleted, max waiting ... pull again shortly.
            log.info("pull_ended", partition=self._partition, status=status,
                     description=(msg.headers or {}).get("Description"))
            self._pause = 0.5
        self._pull_ended.set()

    # -- taking a partition over ---------------------------------------------------------

    def _take_over(self) -> None:
        if self._held is None:
            self._held = []
            self._owner.spawn(self._catch_up(), f"partition-{self._partition}-catch-up")

    async def _catch_up(self) -> None:
        """Run nothing until every command of the partition pending at the server is in this
        replica's hands (a previous holder's come back after its ack_wait); then all of them in
        stream order."""
        waited = False
        while not self._owner.stopping:
            try:
                info = await self._owner.js.consumer_info(subjects.COMMANDS_STREAM, self._durable)
                if info.num_ack_pending <= len(self._mine):
                    break
            except Exception as exc:
                log.warning("catch_up_check_failed", partition=self._partition, error=repr(exc))
            if not waited:
                log.info("partition_catching_up", partition=self._partition,
                         note="commands of this partition are still pending elsewhere; waiting for them")
                waited = True
            await asyncio.sleep(CATCH_UP_POLL_S)
        held, self._held = self._held or [], None
        for msg in sorted(held, key=_seq):
            self._dispatch(msg)
        if waited:
            log.info("partition_caught_up", partition=self._partition, commands=len(held))

    # -- lanes ----------------------------------------------------------------------------

    def _dispatch(self, msg: Msg) -> None:
        key = msg.subject.rpartition(".")[2]
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
        if lane.blocked_seq is not None:
            if _seq(msg) != lane.blocked_seq:
                lane.queue.append(msg)
                self._owner.touch(msg)
                return
            lane.blocked_seq = None
            lane.queue.appendleft(msg)
        else:
            lane.queue.append(msg)
        self._start_lane(key, lane)

    def _start_lane(self, key: str, lane: _Lane) -> None:
        if not lane.running:
            lane.running = True
            task = asyncio.create_task(self._run_lane(key, lane))
            self._lane_tasks.add(task)
            task.add_done_callback(self._lane_tasks.discard)

    async def _run_lane(self, key: str, lane: _Lane) -> None:
        try:
            while lane.queue and lane.blocked_seq is None:
                msg = lane.queue.popleft()
                seq = _seq(msg)
                if await self._owner.handle(msg):
                    lane.blocked_seq = seq
                    lane.blocked_until = time.monotonic() + self._owner.ack_wait_s + BLOCK_LIMIT_EXTRA_S
                    for waiting in lane.queue:
                        self._owner.touch(waiting)
                else:
                    self._mine.discard(seq)
        finally:
            lane.running = False
            if not lane.queue and lane.blocked_seq is None and self._lanes.get(key) is lane:
                del self._lanes[key]

    def blocked_in_hand(self) -> list[Msg]:
        """Commands waiting in hand for a blocked command or a takeover: kept from redelivery."""
        now = time.monotonic()
        waiting: list[Msg] = list(self._held or ())
        for key, lane in list(self._lanes.items()):
            if lane.blocked_seq is None:
                continue
            if now > lane.blocked_until:
                log.warning("blocked_command_did_not_return", partition=self._partition, stream_seq=lane.blocked_seq,
                            note="it left the stream; the workspace's later commands run now")
                self._mine.discard(lane.blocked_seq)
                lane.blocked_seq = None
                if lane.queue:
                    self._start_lane(key, lane)
                continue
            waiting.extend(lane.queue)
        return waiting

    def _release_blocked(self) -> None:
        """The partition went to another replica: commands waiting behind a blocked one are
        left to come back to the new holder (after the blocked one: they were refreshed
        later), in stream order there."""
        for key, lane in list(self._lanes.items()):
            if lane.blocked_seq is not None:
                self._mine.discard(lane.blocked_seq)
                for msg in lane.queue:
                    self._mine.discard(_seq(msg))
                del self._lanes[key]
        for msg in self._held or ():
            self._mine.discard(_seq(msg))
        if self._held is not None:
            self._held.clear()

    # -- stopping -------------------------------------------------------------------------

    async def drain(self) -> None:
        """After the pull loop ended: let the commands in hand finish; blocked ones stay for
        the next holder."""
        self._release_blocked()
        while self._lane_tasks:
            await asyncio.gather(*list(self._lane_tasks), return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._lane_tasks):
            task.cancel()

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()


class PartitionConsumers:
    def __init__(self, js: JetStreamContext, handler: Handler, partitions: int, *,
                 in_flight: int = streams.DEFAULT_IN_FLIGHT, ack_wait_s: float = 60.0,
                 crash_retry_delay: float = CRASH_RETRY_DELAY_S) -> None:
        self.js = js
        self.nc = js._nc
        self.in_flight = in_flight
        self.ack_wait_s = ack_wait_s
        self.stopping = False
        self._crash_retry_delay = crash_retry_delay
        self._handler = handler
        self._partitions = [_Partition(self, p) for p in range(partitions)]
        self._background: set[asyncio.Task] = set()
        self._tracer = _tracer()

    async def start(self) -> None:
        for partition in self._partitions:
            await partition.start()
        self.spawn(self._refresh_waiting(), "partition-refresh")

    def spawn(self, coro, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop(self, timeout: float) -> None:
        """Take no new command; let the ones in hand finish (up to `timeout`), then cancel.
        Idempotent: the worker calls it on the way out and again from its exit stack."""
        if self.stopping:
            return
        self.stopping = True
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
        for task in [*pulls, *self._background]:
            task.cancel()
        await asyncio.gather(*pulls, *self._background, return_exceptions=True)
        for partition in self._partitions:
            await partition.close()

    def touch(self, msg: Msg) -> None:
        self.spawn(self._in_progress(msg), "touch")

    @staticmethod
    async def _in_progress(msg: Msg) -> None:
        with contextlib.suppress(Exception):  # gone or reconnecting: ack_wait decides then
            await msg.in_progress()

    async def _refresh_waiting(self) -> None:
        """Commands waiting in hand are refreshed well within ack_wait, so they are not
        redelivered (out of order, elsewhere) while this replica is alive."""
        while not self.stopping:
            await asyncio.sleep(self.ack_wait_s / 3)
            for partition in self._partitions:
                for msg in partition.blocked_in_hand():
                    await self._in_progress(msg)

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
            with contextlib.suppress(Exception):
                await msg.nak(delay=self._crash_retry_delay)
            return True
