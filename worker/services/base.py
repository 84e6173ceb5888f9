"""What every command service gives the handler, and how any of them answers a repeat."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, overload

import asyncpg

from contracts.codec import encode
from contracts.commands import Envelope
from db.repository import OutboxRow, Stored
from worker.domain import messages


@dataclass(frozen=True, slots=True)
class Handled:
    """What the handler does after the database: publish `events`, then reply `result`."""

    result: bytes
    events: list[OutboxRow]
    duplicate: bool


class CommandService(Protocol):
    async def run(self, cmd: Envelope) -> Handled:
        """Apply the command once (the inbox answers repeats) and return what to publish."""

    def failure_result(self, cmd: Envelope) -> bytes:
        """The answer when the worker gives up on the command."""


def is_inbox_conflict(exc: asyncpg.UniqueViolationError) -> bool:
    """The command's inbox row was stored first by another delivery of the same command; any
    other unique violation is a fault of its own, not an answer waiting to be read."""
    table: str | None = exc.table_name
    return table == "processed_commands"


@overload
def seen_before(cmd: Envelope, stored: Stored, tenant: str) -> Handled: ...
@overload
def seen_before(cmd: Envelope, stored: Stored | None, tenant: str) -> Handled | None: ...
def seen_before(cmd: Envelope, stored: Stored | None, tenant: str) -> Handled | None:
    """Was this command seen before? The one place that decides; every path that can find a
    stored result asks here: the create's context read and its locked save (which may find a
    racing delivery's result), a refusal's store, and the other commands' locked read.

    `tenant`: the bot this worker serves ('' for none), which a stored row must have been
    stored for to be this command's. None: not seen, go on. Otherwise the answer: the stored
    result with the events a crash left unpublished. Command ids must be unique across
    workspaces and bots; a clash is refused rather than answered with another workspace's or
    another bot's result.
    """
    if stored is None:
        return None
    if stored.tenant != tenant or (stored.workspace_id is not None and stored.workspace_id != cmd.workspace_id):
        reason = "command_id was already used by a command of another workspace or another bot: use a fresh, unique id"
        return Handled(encode(messages.invalid_command(cmd.command_id, reason)), [], duplicate=True)
    return Handled(stored.result, stored.pending, duplicate=True)


async def once(cmd: Envelope, body: Callable[[], Awaitable[Handled]]) -> Handled:
    """Run a service body that stores the command's result in its own transaction.

    Two deliveries of one command can run at once (a redelivery racing a slow original);
    the later one's inbox insert fails and its transaction rolls back whole. One more run
    then finds the stored result where every run looks first (seen_before). Any other unique
    violation, or a second conflict in a row, is a failure like any other: no loop.
    """
    try:
        return await body()
    except asyncpg.UniqueViolationError as exc:
        if not is_inbox_conflict(exc):
            raise
    return await body()
