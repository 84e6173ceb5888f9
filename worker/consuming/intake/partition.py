"""One partition of the command stream as one replica holds it: the pull loop with its
hand-written pull requests in the partition's priority group, the pin (taken, lost, given
away to balance the replicas), the catch-up that restores stream order after a takeover, and
the check for a blocked command gone from the stream. The order within the hand is
worker/consuming/intake/lanes.py; PartitionConsumers (worker/consuming/intake/partitions.py), the
set of a replica's partitions, gives each what it needs as one typed `Pulling`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.consuming.administration import streams
from worker.consuming.intake.lanes import Lanes
from worker.shared import jetstream
from worker.shared.jetstream import stream_seq

log = structlog.get_logger("worker")

# How long a pull waits at the server; also about how long stop() waits for an idle pull.
PULL_EXPIRES_S = 1.0
# A pull that got no answer at all for this long (a server restart) is replaced.
PULL_STALLED_S = PULL_EXPIRES_S + 4.0
CATCH_UP_POLL_S = 1.0
# A command arriving on a pull this replica no longer wants comes back after this long, when
# the pull has expired.
GIVE_BACK_LATER_S = 2 * PULL_EXPIRES_S


@dataclass(frozen=True, slots=True)
class Pulling:
    """What a partition pulls with, and where its commands go: the same for every partition
    of a replica (PartitionConsumers makes it)."""

    nc: NatsClient  # the connection `js` was made from: pulls and unpins are requests of their own
    js: JetStreamContext
    domain: str | None  # the JetStream domain `js` was made for, if any
    in_flight: int  # commands in hand at most
    ack_wait_s: float
    handle: Callable[[Msg], Awaitable[bool]]  # runs a command; True: it went back for a later attempt
    hand_back: Callable[[Msg, float | None], None]  # a nak (with a delay, or none), let go of at once
    spawn: Callable[[Coroutine[Any, Any, None], str], None]  # a background task stop() cancels
    stopping: Callable[[], bool]


class Partition:
    def __init__(self, pulling: Pulling, partition: int | None) -> None:
        self._pulling = pulling
        self._partition: int | str = "unplaced" if partition is None else partition
        self._durable = streams.UNPLACED_CONSUMER if partition is None else streams.partition_consumer_name(partition)
        self._next_subject = streams.partition_api("CONSUMER.MSG.NEXT", self._durable, domain=pulling.domain)
        self._inbox = pulling.nc.new_inbox()
        self._sub: Subscription | None = None
        self._pin: str | None = None
        # Bumped whenever the pin is taken or lost: work of an older tenure never blocks a lane.
        self._tenure = 0
        self._remaining = 0  # messages the open pull may still bring
        self._pull_ended = asyncio.Event()
        self._pause = 0.0
        self._lanes = Lanes(pulling.handle, tenure=lambda: self._tenure, forget=self._forget,
                            ack_wait_s=pulling.ack_wait_s)
        # Stream sequences in this replica's hands or coming back to it (nak'd with a delay), and
        # how many left that set: what _catch_up compares with the server's ack-pending count.
        self._mine: set[int] = set()
        self._let_go = 0
        self._held: list[Msg] | None = None  # while catching up after taking the partition
        self._last_delivery = 0  # the server's highest delivery number (consumer sequence) seen
        self._yield_until = 0.0
        self.pull_task: asyncio.Task[None] | None = None

    @property
    def durable(self) -> str:
        return self._durable

    @property
    def holds(self) -> bool:
        return self._pin is not None and not self._yielding()

    def _yielding(self) -> bool:
        return time.monotonic() < self._yield_until

    async def start(self) -> None:
        self._sub = await self._pulling.nc.subscribe(self._inbox, cb=self._on_msg)
        self.pull_task = asyncio.create_task(self._pull_loop(), name=f"partition-{self._partition}")

    # -- pulling --------------------------------------------------------------------------

    async def _pull_loop(self) -> None:
        nc = self._pulling.nc
        batch = self._pulling.in_flight
        while not self._pulling.stopping():
            if self._yielding():
                await asyncio.sleep(min(self._yield_until - time.monotonic(), PULL_EXPIRES_S))
                continue
            request = jetstream.pull_request(batch, expires_s=PULL_EXPIRES_S, group=streams.PARTITION_GROUP,
                                             pin=self._pin)
            self._remaining = batch
            self._pull_ended.clear()
            try:
                await nc.publish(self._next_subject, request, reply=self._inbox)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._pull_ended.wait(), PULL_STALLED_S)
            except Exception as exc:  # reconnecting: commands wait in JetStream meanwhile
                if self._pulling.stopping():
                    return
                log.warning("pull_failed", partition=self._partition, error=repr(exc))
                self._pause = 1.0
            if self._pause:
                await asyncio.sleep(self._pause)
                self._pause = 0.0

    async def _on_msg(self, msg: Msg) -> None:
        status = jetstream.pull_status(msg)
        if status is not None:  # from the server about the pull, not a command
            self._on_status(status, msg)
            return
        if not jetstream.is_delivery_of(msg, subjects.COMMANDS_STREAM, self._durable):
            # Not this consumer's delivery: never run, acknowledged or handed back (the ack would
            # be a publish to whatever reply subject it carries).
            log.warning("partition_foreign_message", partition=self._partition, subject=msg.subject[:256],
                        reply=(msg.reply or "")[:256])
            return
        self._remaining -= 1
        if self._remaining <= 0:
            self._pull_ended.set()
        if self._pulling.stopping() or self._yielding():
            # Delivered on a pull still open when this replica let go. Handed back for later
            # than the pull can live: an immediate nak is redelivered at once onto the same open
            # pull, and again, each time counted by the server (measured: 15 to 22 deliveries
            # in the half second of a stop, then dead-lettered by the next worker as poison).
            self._give_back(msg, delay=GIVE_BACK_LATER_S)
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
        self._mine.add(stream_seq(msg))
        if self._held is not None:
            self._held.append(msg)
        else:
            self._lanes.dispatch(msg)

    def _on_status(self, status: str, msg: Msg) -> None:
        if status == jetstream.HEARTBEAT:
            return
        if status == jetstream.PINNED_ELSEWHERE:  # another replica holds the partition now
            if self._pin is not None:
                self._lose("another replica holds it now")
            self._pin = None
        elif status not in (jetstream.NO_MESSAGES, jetstream.REQUEST_TIMEOUT):
            # 409: leadership change, consumer deleted, max waiting ... pull again shortly.
            log.info("pull_ended", partition=self._partition, status=status,
                     description=jetstream.pull_status_description(msg))
            self._pause = 0.5
        self._pull_ended.set()

    # -- taking a partition over, and letting it go ----------------------------------------

    def _start_catch_up(self) -> None:
        self._held = []
        self._pulling.spawn(self._catch_up(self._tenure), f"partition-{self._partition}-catch-up")

    async def _catch_up(self, tenure: int) -> None:
        """Run nothing until every command of the partition pending at the server is in this
        replica's hands; then all of them in stream order."""
        waited = False
        while not self._pulling.stopping() and tenure == self._tenure:
            # What this replica holds is counted before asking; anything that left its hands
            # meanwhile makes the answer unusable (the server may have counted it, or not).
            holding, let_go = len(self._mine), self._let_go
            try:
                info = await self._pulling.js.consumer_info(subjects.COMMANDS_STREAM, self._durable)
                if tenure == self._tenure and info.num_ack_pending <= holding and let_go == self._let_go:
                    break
            except Exception as exc:
                log.warning("catch_up_check_failed", partition=self._partition, error=repr(exc))
            if not waited:
                log.info("partition_catching_up", partition=self._partition,
                         note="commands of this partition are pending elsewhere; waiting for them")
                waited = True
            await asyncio.sleep(CATCH_UP_POLL_S)
        if self._pulling.stopping() or tenure != self._tenure:
            return  # stop() or _lose() hand the held commands back
        held, self._held = self._held or [], None
        for msg in sorted(held, key=stream_seq):
            self._lanes.dispatch(msg)
        if waited:
            log.info("partition_caught_up", partition=self._partition, commands=len(held))

    async def give_away(self, seconds: float) -> None:
        """Let another replica (one is waiting) hold this partition: no pulls for `seconds`,
        the server's pin cleared, and what is in hand handed back as on any loss."""
        self._yield_until = time.monotonic() + seconds
        try:
            await self._pulling.nc.request(streams.partition_api("CONSUMER.UNPIN", self._durable, domain=self._pulling.domain),
                                        jetstream.unpin_request(streams.PARTITION_GROUP), timeout=5)
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
        self._lanes.let_go(self._give_back)
        held, self._held = self._held or [], None
        for msg in held:
            self._give_back(msg)
        # The running ones are no longer counted as this replica's: should it take the
        # partition again, its catch-up waits for them like for anyone else's.
        self._let_go += len(self._mine)
        self._mine.clear()

    def _give_back(self, msg: Msg, delay: float | None = None) -> None:
        self._forget(stream_seq(msg))
        self._pulling.hand_back(msg, delay)

    def _forget(self, seq: int) -> None:
        if seq in self._mine:
            self._mine.discard(seq)
            self._let_go += 1

    def in_hand(self) -> list[Msg]:
        """Every command in hand, running or waiting: refreshed so none is redelivered."""
        return [*(self._held or ()), *self._lanes.in_hand()]

    async def unblock_vanished(self) -> None:
        """A lane blocked far longer than any retry delay looks its command up: gone from the
        stream (purged by an operator) means it will never come back."""
        now = time.monotonic()
        for key, seq in self._lanes.blocked_due_for_check(now):
            try:
                await self._pulling.js.get_msg(subjects.COMMANDS_STREAM, seq)
            except NotFoundError:
                if self._lanes.unblock(key, seq):
                    log.warning("blocked_command_vanished", partition=self._partition, stream_seq=seq,
                                note="it left the stream; the workspace's later commands run now")
                    self._forget(seq)
            except Exception as exc:  # NATS away: ask again later
                log.warning("blocked_command_check_failed", partition=self._partition, error=repr(exc))
            else:
                self._lanes.check_again(key, seq, now + self._pulling.ack_wait_s)

    # -- stopping -------------------------------------------------------------------------

    async def drain(self) -> None:
        """After the pull loop ended: hand back what is not running, let the rest finish."""
        self._let_go_of_all()
        await self._lanes.finish()

    def cancel(self) -> None:
        self._lanes.cancel()

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
