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
import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable

import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from worker import streams

log = structlog.get_logger("worker")

# How long a pull waits at the server; also about how long stop() waits for an idle pull.
PULL_EXPIRES_S = 1.0
# A pull that got no answer at all for this long (a server restart) is replaced.
PULL_STALLED_S = PULL_EXPIRES_S + 4.0
CRASH_RETRY_DELAY_S = 5.0
CATCH_UP_POLL_S = 1.0
BALANCE_EVERY_S = 5.0
# A partition given away is not pulled for this long, so a waiting replica takes it; after it,
# this replica waits for it again (standing by, should its new holder stop).
YIELD_S = 30.0
# A blocked command not back after its longest retry delay (30 s) plus this is looked up in
# the stream: if it is gone (an operator purge), its lane stops waiting for it.
BLOCK_CHECK_AFTER_S = 40.0

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

    __slots__ = ("queue", "running", "current", "blocked_seq", "check_at")

    def __init__(self) -> None:
        self.queue: deque[Msg] = deque()
        self.running = False
        self.current: Msg | None = None  # the command being handled
        self.blocked_seq: int | None = None
        self.check_at = 0.0


class _Partition:
    def __init__(self, owner: PartitionConsumers, partition: int | None) -> None:
        self._owner = owner
        self._partition = "unplaced" if partition is None else partition
        self._durable = streams.UNPLACED_CONSUMER if partition is None else streams.partition_consumer_name(partition)
        self._next_subject = streams.partition_api(owner.js, "CONSUMER.MSG.NEXT", self._durable)
        self._inbox = owner.nc.new_inbox()
        self._sub = None
        self._pin: str | None = None
        # Bumped whenever the pin is taken or lost: work of an older tenure never blocks a lane.
        self._tenure = 0
        self._remaining = 0  # messages the open pull may still bring
        self._pull_ended = asyncio.Event()
        self._pause = 0.0
        self._lanes: dict[str, _Lane] = {}
        self._lane_tasks: set[asyncio.Task] = set()
        # Stream sequences in this replica's hands or coming back to it (nak'd with a delay), and
        # how many left that set: what _catch_up compares with the server's ack-pending count.
        self._mine: set[int] = set()
        self._let_go = 0
        self._held: list[Msg] | None = None  # while catching up after taking the partition
        self._last_delivery = 0  # the server's highest delivery number (consumer sequence) seen
        self._yield_until = 0.0
        self.pull_task: asyncio.Task | None = None

    @property
    def durable(self) -> str:
        return self._durable

    @property
    def holds(self) -> bool:
        return self._pin is not None and not self._yielding()

    def _yielding(self) -> bool:
        return time.monotonic() < self._yield_until

    async def start(self) -> None:
        self._sub = await self._owner.nc.subscribe(self._inbox, cb=self._on_msg)
        self.pull_task = asyncio.create_task(self._pull_loop(), name=f"partition-{self._partition}")

    # -- pulling --------------------------------------------------------------------------

    async def _pull_loop(self) -> None:
        nc = self._owner.nc
        batch = self._owner.in_flight
        while not self._owner.stopping:
            if self._yielding():
                await asyncio.sleep(min(self._yield_until - time.monotonic(), PULL_EXPIRES_S))
                continue
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
        self._remaining -= 1
        if self._remaining <= 0:
            self._pull_ended.set()
        if self._owner.stopping or self._yielding():
            self._give_back(msg)  # delivered on a pull still open when this replica let go
            return
        pin = msg.headers.get("Nats-Pin-Id") if msg.headers else None
        delivery = msg.metadata.sequence.consumer
        if pin is not None and pin != self._pin:
            if self._pin is not None:
                self._lose("the server pinned this replica again under a new id")
            self._pin = pin
            self._tenure += 1
            self._last_delivery = delivery
            self._start_catch_up()
        elif delivery > self._last_delivery + 1 and self._held is None:
            # The server numbers its deliveries; one of this tenure never arrived (lost with a
            # NATS node it passed through). The server counts it pending and redelivers it after
            # ack_wait: until then its workspace's later commands must not run.
            log.warning("partition_delivery_lost", partition=self._partition, expected=self._last_delivery + 1,
                        delivered=delivery, note="waiting for the lost delivery to come back")
            self._start_catch_up()
        self._last_delivery = max(self._last_delivery, delivery)
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
                self._lose("another replica holds it now")
            self._pin = None
        elif status not in ("404", "408"):
            # 409: leadership change, consumer deleted, max waiting ... pull again shortly.
            log.info("pull_ended", partition=self._partition, status=status,
                     description=(msg.headers or {}).get("Description"))
            self._pause = 0.5
        self._pull_ended.set()

    # -- taking a partition over, and letting it go ----------------------------------------

    def _start_catch_up(self) -> None:
        self._held = []
        self._owner.spawn(self._catch_up(self._tenure), f"partition-{self._partition}-catch-up")

    async def _catch_up(self, tenure: int) -> None:
        """Run nothing until every command of the partition pending at the server is in this
        replica's hands; then all of them in stream order."""
        waited = False
        while not self._owner.stopping and tenure == self._tenure:
            # What this replica holds is counted before asking; anything that left its hands
            # meanwhile makes the answer unusable (the server may have counted it, or not).
            holding, let_go = len(self._mine), self._let_go
            try:
                info = await self._owner.js.consumer_info(subjects.COMMANDS_STREAM, self._durable)
                if tenure == self._tenure and info.num_ack_pending <= holding and let_go == self._let_go:
                    break
            except Exception as exc:
                log.warning("catch_up_check_failed", partition=self._partition, error=repr(exc))
            if not waited:
                log.info("partition_catching_up", partition=self._partition,
                         note="commands of this partition are pending elsewhere; waiting for them")
                waited = True
            await asyncio.sleep(CATCH_UP_POLL_S)
        if self._owner.stopping or tenure != self._tenure:
            return  # stop() or _lose() hand the held commands back
        held, self._held = self._held or [], None
        for msg in sorted(held, key=_seq):
            self._dispatch(msg)
        if waited:
            log.info("partition_caught_up", partition=self._partition, commands=len(held))

    async def give_away(self, seconds: float) -> None:
        """Let another replica (one is waiting) hold this partition: no pulls for `seconds`,
        the server's pin cleared, and what is in hand handed back as on any loss."""
        self._yield_until = time.monotonic() + seconds
        try:
            await self._owner.nc.request(streams.partition_api(self._owner.js, "CONSUMER.UNPIN", self._durable),
                                         json.dumps({"group": streams.PARTITION_GROUP}).encode(), timeout=5)
        except Exception as exc:  # it moves anyway once this replica has not pulled for the pin timeout
            log.warning("unpin_failed", partition=self._partition, error=repr(exc))
        if self._pin is not None:
            self._pin = None
            self._lose("given to a waiting replica, to balance the replicas")

    def _lose(self, why: str) -> None:
        log.info("partition_released", partition=self._partition, reason=why)
        self._let_go_of_all()

    def _let_go_of_all(self) -> None:
        """A new tenure, and every command in hand not yet running back to the server at once
        (its next holder restores stream order); the running ones finish and block nothing."""
        self._tenure += 1
        for key, lane in list(self._lanes.items()):
            if lane.blocked_seq is not None:
                self._forget(lane.blocked_seq)  # it comes back to whoever holds the partition
                lane.blocked_seq = None
            while lane.queue:
                self._give_back(lane.queue.popleft())
            self._resume(key, lane)
        held, self._held = self._held or [], None
        for msg in held:
            self._give_back(msg)
        # The running ones are no longer counted as this replica's: should it take the
        # partition again, its catch-up waits for them like for anyone else's.
        self._let_go += len(self._mine)
        self._mine.clear()

    def _give_back(self, msg: Msg) -> None:
        self._forget(_seq(msg))
        self._owner.nak_soon(msg)

    def _forget(self, seq: int) -> None:
        if seq in self._mine:
            self._mine.discard(seq)
            self._let_go += 1

    # -- lanes ----------------------------------------------------------------------------

    def _dispatch(self, msg: Msg) -> None:
        key = msg.subject.rpartition(".")[2]
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
        seq = _seq(msg)
        if (lane.current is not None and _seq(lane.current) == seq) or any(_seq(m) == seq for m in lane.queue):
            # A second delivery of a command in hand (its ack_wait ran out while it waited or
            # ran): the first settles the sequence; running it twice in one lane could only
            # misorder a retry.
            return
        if lane.blocked_seq is not None:
            if seq != lane.blocked_seq:
                lane.queue.append(msg)
                return
            lane.blocked_seq = None
            lane.queue.appendleft(msg)
        else:
            lane.queue.append(msg)
        self._resume(key, lane)

    def _resume(self, key: str, lane: _Lane) -> None:
        """Run a lane that has work and nothing blocking it; drop one with nothing left."""
        if lane.running or lane.blocked_seq is not None:
            return
        if lane.queue:
            lane.running = True
            task = asyncio.create_task(self._run_lane(key, lane))
            self._lane_tasks.add(task)
            task.add_done_callback(self._lane_tasks.discard)
        else:
            self._drop_if_idle(key, lane)

    def _drop_if_idle(self, key: str, lane: _Lane) -> None:
        if not lane.running and not lane.queue and lane.blocked_seq is None and self._lanes.get(key) is lane:
            del self._lanes[key]

    async def _run_lane(self, key: str, lane: _Lane) -> None:
        try:
            while lane.queue and lane.blocked_seq is None:
                msg = lane.current = lane.queue.popleft()
                seq, tenure = _seq(msg), self._tenure
                handed_back = await self._owner.handle(msg)
                lane.current = None
                if handed_back and tenure == self._tenure:
                    lane.blocked_seq = seq
                    lane.check_at = time.monotonic() + BLOCK_CHECK_AFTER_S + self._owner.ack_wait_s
                elif tenure == self._tenure:
                    self._forget(seq)
        finally:
            # Not _resume: a lane left with work only when its task was cancelled (stopping).
            lane.running = False
            lane.current = None
            self._drop_if_idle(key, lane)

    def in_hand(self) -> list[Msg]:
        """Every command in hand, running or waiting: refreshed so none is redelivered."""
        commands: list[Msg] = list(self._held or ())
        for lane in self._lanes.values():
            if lane.current is not None:
                commands.append(lane.current)
            commands.extend(lane.queue)
        return commands

    async def unblock_vanished(self) -> None:
        """A lane blocked far longer than any retry delay looks its command up: gone from the
        stream (purged by an operator) means it will never come back."""
        now = time.monotonic()
        for key, lane in list(self._lanes.items()):
            seq = lane.blocked_seq
            if seq is None or now < lane.check_at:
                continue
            try:
                await self._owner.js.get_msg(subjects.COMMANDS_STREAM, seq)
            except NotFoundError:
                if lane.blocked_seq != seq:
                    continue
                log.warning("blocked_command_vanished", partition=self._partition, stream_seq=seq,
                            note="it left the stream; the workspace's later commands run now")
                self._forget(seq)
                lane.blocked_seq = None
                self._resume(key, lane)
            except Exception as exc:  # NATS away: ask again later
                log.warning("blocked_command_check_failed", partition=self._partition, error=repr(exc))
            else:
                lane.check_at = now + self._owner.ack_wait_s

    # -- stopping -------------------------------------------------------------------------

    async def drain(self) -> None:
        """After the pull loop ended: hand back what is not running, let the rest finish."""
        self._let_go_of_all()
        while self._lane_tasks:
            await asyncio.gather(*list(self._lane_tasks), return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._lane_tasks):
            task.cancel()

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()


async def _quietly(ack: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):  # gone or reconnecting: ack_wait decides then
        await ack


class PartitionConsumers:
    def __init__(self, js: JetStreamContext, handler: Handler, partitions: int, *,
                 in_flight: int = streams.DEFAULT_IN_FLIGHT, ack_wait_s: float = 60.0,
                 crash_retry_delay: float = CRASH_RETRY_DELAY_S, balance_every_s: float = BALANCE_EVERY_S,
                 yield_s: float = YIELD_S) -> None:
        self.js = js
        self.nc = js._nc
        self.in_flight = in_flight
        self.ack_wait_s = ack_wait_s
        self.stopping = False
        self._crash_retry_delay = crash_retry_delay
        self._balance_every_s = balance_every_s
        self._yield_s = yield_s
        self._replica_counts: deque[int] = deque(maxlen=3)
        self._handler = handler
        # The unplaced commands' consumer (None) is pulled like a partition: they are dead-lettered.
        self._partitions = [_Partition(self, p) for p in [*range(partitions), None]]
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

    def nak_soon(self, msg: Msg) -> None:
        task = asyncio.create_task(_quietly(msg.nak()))
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
