"""How result lookups share the worker: side by side, bounded, and fair between workspaces.

A plain lookup is one indexed read; an outcome lookup may read up to SCAN_LIMIT messages of
the workspace's queue and dead letters (outcomes.py), and any bot can make its own workspace's
scans long by filling its dead letters. So the two never wait for each other:

- plain lookups go to a bounded queue read by a few runners of their own;
- outcome lookups wait by workspace. A workspace has at most one scan in flight, and a scan
  answers every command of that workspace asked before it started, so identical lookups share
  one answer and a workspace's flood costs it a scan at a time. A few scan runners take the
  waiting workspaces in turn (a workspace asked again goes to the back), so another
  workspace's outcome waits for at most one scan of each workspace ahead of it per runner.

Nothing grows without bound: a lookup past a queue's or a workspace's limit is dropped
unanswered (the asker's request times out and it may ask again), counted and logged by its
subject only, never by what it carried.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from contracts import subjects
from worker.consuming import metrics

log = structlog.get_logger("worker")

Respond = Callable[[bytes], Awaitable[None]]
# (workspace token, command token) -> the plain answer.
PlainAnswer = Callable[[str, str], Awaitable[bytes]]
# (workspace token, command tokens) -> the outcome of each, by command token.
OutcomeAnswers = Callable[[str, list[str]], Awaitable[dict[str, bytes]]]


@dataclass(frozen=True, slots=True)
class LookupLimits:
    """plain_runners: plain lookups read side by side (each holds a database connection).
    plain_waiting: plain lookups queued for them. scan_runners: outcome scans in flight, over
    all workspaces. workspaces_waiting: workspaces with outcome lookups waiting.
    per_workspace_waiting: outcome lookups one workspace may have waiting (its next scan's
    batch)."""

    plain_runners: int = 8
    plain_waiting: int = 1024
    scan_runners: int = 4
    workspaces_waiting: int = 1024
    per_workspace_waiting: int = 64


@dataclass(slots=True)
class _Waiting:
    """A workspace's outcome lookups for its next scan: who asked, by command token."""

    askers: dict[str, list[Respond]]
    count: int = 0


class LookupScheduler:
    def __init__(self, plain: PlainAnswer, outcomes: OutcomeAnswers, limits: LookupLimits = LookupLimits()) -> None:
        self._plain = plain
        self._outcomes = outcomes
        self._limits = limits
        self._plain_queue: asyncio.Queue[tuple[str, str, Respond]] = asyncio.Queue(maxsize=limits.plain_waiting)
        self._waiting: dict[str, _Waiting] = {}  # by workspace token
        self._scanning: set[str] = set()
        # Workspaces waiting for a scan runner, each at most once, oldest first: at most
        # workspaces_waiting of them.
        self._turns: asyncio.Queue[str] = asyncio.Queue()
        self._runners: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._runners = [asyncio.create_task(self._run_plain(), name=f"lookup-plain-{i}")
                         for i in range(self._limits.plain_runners)]
        self._runners += [asyncio.create_task(self._run_scans(), name=f"lookup-scan-{i}")
                          for i in range(self._limits.scan_runners)]

    async def aclose(self) -> None:
        for task in self._runners:
            task.cancel()
        await asyncio.gather(*self._runners, return_exceptions=True)
        self._runners = []

    def plain(self, subject: str, workspace_token: str, command_token: str, respond: Respond) -> None:
        try:
            self._plain_queue.put_nowait((workspace_token, command_token, respond))
        except asyncio.QueueFull:
            _dropped(subject, "plain lookups waiting")

    def outcome(self, subject: str, workspace_token: str, command_token: str, respond: Respond) -> None:
        waiting = self._waiting.get(workspace_token)
        if waiting is None:
            if len(self._waiting) >= self._limits.workspaces_waiting:
                _dropped(subject, "workspaces waiting")
                return
            waiting = self._waiting[workspace_token] = _Waiting({})
            if workspace_token not in self._scanning:  # else it takes its turn when its scan ends
                self._take_turn(workspace_token)
        if waiting.count >= self._limits.per_workspace_waiting:
            _dropped(subject, "the workspace's lookups waiting")
            return
        waiting.askers.setdefault(command_token, []).append(respond)
        waiting.count += 1

    def _take_turn(self, workspace_token: str) -> None:
        self._turns.put_nowait(workspace_token)

    async def _run_plain(self) -> None:
        while True:
            workspace_token, command_token, respond = await self._plain_queue.get()
            try:
                reply = await self._plain(workspace_token, command_token)
            except Exception as exc:  # a lookup must never take the worker down; the asker retries
                log.warning("result_lookup_failed", workspace_token=workspace_token[:subjects.REPLY_SUBJECT_MAX],
                            error=repr(exc))
                continue
            await _respond(respond, reply)

    async def _run_scans(self) -> None:
        while True:
            workspace_token = await self._turns.get()
            waiting = self._waiting.pop(workspace_token)
            self._scanning.add(workspace_token)
            try:
                answers = await self._outcomes(workspace_token, list(waiting.askers))
            except Exception as exc:  # unanswered: the askers retry
                log.warning("result_lookup_failed", workspace_token=workspace_token[:subjects.REPLY_SUBJECT_MAX],
                            lookups=waiting.count, error=repr(exc))
                answers = {}
            finally:
                self._scanning.discard(workspace_token)
                if workspace_token in self._waiting:  # asked again meanwhile: to the back of the line
                    self._take_turn(workspace_token)
            for command_token, askers in waiting.askers.items():
                if command_token in answers:
                    for respond in askers:
                        await _respond(respond, answers[command_token])


async def _respond(respond: Respond, reply: bytes) -> None:
    with contextlib.suppress(Exception):  # a closed connection or a gone asker: it asks again
        await respond(reply)


def _dropped(subject: str, full: str) -> None:
    metrics.LOOKUPS_DROPPED.inc()
    log.warning("result_lookup_dropped", subject=subject[:subjects.REPLY_SUBJECT_MAX], full=full)
