"""Shadow mode on the bot's side (docs/design.md, section 3.6): a write the bot still does
itself, with the worker's dry run of the same command asked for first and a report of what
the write gave sent after, so the worker can say whether it would have decided the same.

The bot is never held up for long and never fails because of the worker: the dry run is
awaited at most `timeout` (a timeout, or any failure to get it, is reported as timed out and
never retried), and the report is published in the background (a failed publish is logged)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import msgspec
import structlog

from contracts.codec import encode
from contracts.envelope import Envelope
from contracts.kinds.shadow import ShadowedKind, ShadowReport

if TYPE_CHECKING:
    from worker.client.memory_client import MemoryClient

log = structlog.get_logger("memory_client")

# How long a shadowed call waits for the dry run before doing its own write without it.
SHADOW_TIMEOUT_S = 0.5
_Own = TypeVar("_Own")


def dry_run_msg_id(command_id: str) -> str:
    """A dry run's Nats-Msg-Id: not its command_id, which the real command may use next (within
    the stream's duplicate window JetStream would drop it as a repeat of the dry run)."""
    return f"{command_id}:dry"


class Shadowing:
    def __init__(self, client: MemoryClient) -> None:
        self._client = client
        self._reports: set[asyncio.Task[None]] = set()

    async def shadowed(self, kind: ShadowedKind, command: Callable[[], Envelope],
                       own_write: Callable[[], Awaitable[_Own]], *,
                       reported: Callable[[_Own], Mapping[str, Any]] | None, timeout: float) -> _Own:
        """1. The dry run of `command()`, awaited at most `timeout` seconds;
        2. `own_write()`, as the bot's write ran before shadow mode: its value is returned (its
           exception raised) unchanged;
        3. what it gave, `reported(value)` in the kind's result shape (`success`, `message` or
           `error`, `data`, `notice`; by default the value as it is), or the exception's text,
           published as memory.shadow.
        Nothing of shadow mode reaches the bot: a command that cannot be built, or a report that
        cannot, is logged and the own write runs (or stands) alone."""
        try:
            cmd = msgspec.structs.replace(command(), dry_run=True, reply_to=self._client.reply_subject())
        except Exception as exc:
            log.warning("shadow_command_not_built", kind=kind, error=repr(exc))
            return await own_write()
        timed_out = not await self._dry_run(kind, cmd, timeout)

        def report_later(result: Callable[[], dict[str, Any] | None], error: str | None = None) -> None:
            try:
                self._report_later(ShadowReport(
                    command_id=uuid.uuid4().hex, issued_at=datetime.now(UTC), workspace_id=cmd.workspace_id,
                    shadowed_id=cmd.command_id, kind=kind, timed_out=timed_out, result=result(),
                    error=None if error is None else error.replace("\x00", "")[:2000]))
            except Exception as exc:  # reported() raised, or gave what is no result
                log.warning("shadow_report_not_built", shadowed_id=cmd.command_id, error=repr(exc))

        try:
            value = await own_write()
        except Exception as exc:
            report_later(lambda: None, str(exc) or repr(exc))
            raise
        report_later(lambda: msgspec.to_builtins(dict(cast(Mapping[str, Any], value) if reported is None
                                                      else reported(value))))
        return value

    async def _dry_run(self, kind: str, cmd: Envelope, timeout: float) -> bool:
        """Whether the worker answered the dry run within `timeout` (its answer is the worker's to keep)."""
        try:
            await asyncio.wait_for(self._client.send_raw(kind, cmd.workspace_id, encode(cmd),
                                                         command_id=cmd.command_id, reply_to=cmd.reply_to,
                                                         timeout=timeout, msg_id=dry_run_msg_id(cmd.command_id)),
                                   timeout)
            return True
        except Exception as exc:  # a timeout, or NATS refusing the publish: the bot goes on
            log.info("shadow_dry_run_unanswered", kind=kind, command_id=cmd.command_id, error=type(exc).__name__)
            return False

    def _report_later(self, report: ShadowReport) -> None:
        task = asyncio.create_task(self._report(report))
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    async def _report(self, report: ShadowReport) -> None:
        try:
            await self._client.send_raw("shadow", report.workspace_id, encode(report), command_id=report.command_id,
                                        reply_to=None)
        except Exception as exc:
            log.warning("shadow_report_not_sent", shadowed_id=report.shadowed_id, error=repr(exc))

    async def reports_sent(self) -> None:
        while self._reports:
            await asyncio.gather(*list(self._reports), return_exceptions=True)
