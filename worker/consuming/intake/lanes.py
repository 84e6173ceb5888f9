"""One lane per workspace: a partition's commands in hand, each workspace's run one at a time
in delivery order, a command handed back for a later attempt blocking its lane until it comes
back or is found gone from the stream. worker/consuming/intake/partition.py holds the
partition, pins and catches up; this is only the order within the hand, and all of the lanes'
state: the partition asks through the methods below and never reads a lane."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg

from contracts import subjects
from worker.shared.jetstream import stream_seq

# A blocked command not back after its longest retry delay (30 s) plus this is looked up in
# the stream: if it is gone (an operator purge), its lane stops waiting for it.
BLOCK_CHECK_AFTER_S = 40.0


class _Lane:
    """One workspace's commands in hand, run one at a time."""

    __slots__ = ("queue", "running", "current", "blocked_seq", "check_at")

    def __init__(self) -> None:
        self.queue: deque[Msg] = deque()
        self.running = False
        self.current: Msg | None = None  # the command being handled
        self.blocked_seq: int | None = None
        self.check_at = 0.0


class Lanes:
    """The lanes of one partition's hand. `handle` runs a command (True: it went back to the
    server for a later attempt); `tenure` is the partition's current tenure (work of an older
    one never blocks a lane); `forget` says a sequence left this replica's hands."""

    def __init__(self, handle: Callable[[Msg], Awaitable[bool]], *, tenure: Callable[[], int],
                 forget: Callable[[int], None], ack_wait_s: float) -> None:
        self._handle = handle
        self._tenure = tenure
        self._forget = forget
        self._ack_wait_s = ack_wait_s
        self._by_key: dict[str, _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def empty(self) -> bool:
        """No lane left: nothing in hand, running, waiting or blocked."""
        return not self._by_key

    @property
    def busy(self) -> bool:
        """A lane is running a command."""
        return bool(self._tasks)

    def dispatch(self, msg: Msg) -> None:
        key = subjects.parse_stored(msg.subject).lane_key
        lane = self._by_key.get(key)
        if lane is None:
            lane = self._by_key[key] = _Lane()
        seq = stream_seq(msg)
        if (lane.current is not None and stream_seq(lane.current) == seq) or any(stream_seq(m) == seq for m in lane.queue):
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

    def blocked_due_for_check(self, now: float) -> list[tuple[str, int]]:
        """(lane key, blocked sequence) of each lane blocked long enough to look its command up."""
        return [(key, lane.blocked_seq) for key, lane in self._by_key.items()
                if lane.blocked_seq is not None and now >= lane.check_at]

    def unblock(self, key: str, seq: int) -> bool:
        """The command `seq` is gone for good: its lane runs what waited behind it. False when
        the lane no longer waits for it (it came back meanwhile, or the partition was let go)."""
        lane = self._by_key.get(key)
        if lane is None or lane.blocked_seq != seq:
            return False
        lane.blocked_seq = None
        self._resume(key, lane)
        return True

    def check_again(self, key: str, seq: int, at: float) -> None:
        """The command `seq` is still in the stream: look again at `at` if it is not back by then."""
        lane = self._by_key.get(key)
        if lane is not None and lane.blocked_seq == seq:
            lane.check_at = at

    def _resume(self, key: str, lane: _Lane) -> None:
        """Run a lane that has work and nothing blocking it; drop one with nothing left."""
        if lane.running or lane.blocked_seq is not None:
            return
        if lane.queue:
            lane.running = True
            task = asyncio.create_task(self._run_lane(key, lane))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self._drop_if_idle(key, lane)

    def _drop_if_idle(self, key: str, lane: _Lane) -> None:
        if not lane.running and not lane.queue and lane.blocked_seq is None and self._by_key.get(key) is lane:
            del self._by_key[key]

    async def _run_lane(self, key: str, lane: _Lane) -> None:
        try:
            while lane.queue and lane.blocked_seq is None:
                msg = lane.current = lane.queue.popleft()
                seq, tenure = stream_seq(msg), self._tenure()
                handed_back = await self._handle(msg)
                lane.current = None
                if handed_back and tenure == self._tenure():
                    lane.blocked_seq = seq
                    lane.check_at = time.monotonic() + BLOCK_CHECK_AFTER_S + self._ack_wait_s
                elif tenure == self._tenure():
                    self._forget(seq)
        finally:
            # Not _resume: a lane left with work only when its task was cancelled (stopping).
            lane.running = False
            lane.current = None
            self._drop_if_idle(key, lane)

    def in_hand(self) -> list[Msg]:
        """Every command in a lane, running or waiting."""
        commands: list[Msg] = []
        for lane in self._by_key.values():
            if lane.current is not None:
                commands.append(lane.current)
            commands.extend(lane.queue)
        return commands

    def let_go(self, give_back: Callable[[Msg], None]) -> None:
        """Every command not yet running back to the server; the running ones finish."""
        for key, lane in list(self._by_key.items()):
            if lane.blocked_seq is not None:
                self._forget(lane.blocked_seq)  # it comes back to whoever holds the partition
                lane.blocked_seq = None
            while lane.queue:
                give_back(lane.queue.popleft())
            self._resume(key, lane)

    async def finish(self) -> None:
        """Wait for the running commands (and any a finishing lane starts)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()
