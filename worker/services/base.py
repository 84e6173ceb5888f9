"""What every command service gives the handler, and how each runs its transaction once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import asyncpg
import msgspec

from contracts.codec import encode
from contracts.envelope import Envelope
from db.inbox import EventRow
from db.repository import MemoryRepository
from worker.domain.events import EventTemplate
from worker.domain.workspace import Limits
from worker.shared.settings import Settings


@dataclass(frozen=True, slots=True)
class Answer:
    """What a command is answered with, and what its log line and metrics say of it, known
    without reading the bytes again."""

    result: bytes
    status: str
    evicted_scope: str | None = None  # a save that forgot a row: its scope in the tool's words
    refused_credential: str | None = None  # a create the secret guard refused: the credential's kind, never its text
    # A shadow report: the shadowed kind, the pair's outcome, and whether a difference is intended.
    shadowed: tuple[str, str, bool] | None = None
    # A command that creates memories: the lock key (scope, Discord id) of their owner, which a
    # dry run keeps so a shadow report can tell a concurrent insert of that owner.
    created_for: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Handled:
    """What the handler does after the database: publish `events` (stored in MEMORY_EVENTS
    before anything else), then reply `answer.result`, then acknowledge."""

    answer: Answer
    events: list[EventRow]
    duplicate: bool
    dry: bool = False  # a dry run's: nothing was written, `events` is empty


# The command type a service takes: each service takes its own kind's (contracts/registry.py).
C_contra = TypeVar("C_contra", bound=Envelope, contravariant=True)


class CommandService(Protocol[C_contra]):
    async def run(self, cmd: C_contra, delivery: int | None = None) -> Handled:
        """Apply the command once (the inbox answers repeats) and return what to publish.

        `delivery`: the MEMORY_COMMANDS stream sequence of the message being handled, stored
        with the command so that only a redelivery of this message publishes its events again
        (worker/services/stored.py, republishes()); None for a caller without a delivery.
        """

    def failure_result(self, cmd: C_contra) -> bytes:
        """The answer when the worker gives up on the command."""


def is_inbox_conflict(exc: asyncpg.UniqueViolationError) -> bool:
    """The command's inbox row was stored first by another delivery of the same command; any
    other unique violation is a fault of its own, not an answer waiting to be read."""
    table: str | None = exc.table_name
    return table == "processed_commands"


def event_rows(templates: Sequence[EventTemplate]) -> list[EventRow]:
    """Events as they are published (and, for every kind but a create, stored whole)."""
    return [EventRow(t.subject, t.headers, msgspec.Raw(encode(t.payload))) for t in templates]


async def once(cmd: Envelope, body: Callable[[], Awaitable[Handled]]) -> Handled:
    """Run a service body that stores the command's result in its own transaction.

    Two deliveries of one command can run at once (a redelivery racing a slow original);
    the later one's inbox insert fails and its transaction rolls back whole. One more run
    then finds the stored command where every run looks first (seen_before). Any other unique
    violation, or a second conflict in a row, is a failure like any other: no loop.
    """
    try:
        return await body()
    except asyncpg.UniqueViolationError as exc:
        if not is_inbox_conflict(exc):
            raise
    return await body()


@dataclass(frozen=True, slots=True)
class Wiring:
    """What a kind's service is built from (each kind's `service.build`): the composition root
    makes one and the service table hands it to every kind, so a kind's needs stay in its package."""

    repo: MemoryRepository
    settings: Settings
    limits: Limits
    observe_batch: Callable[[int], None] = lambda size: None  # told each create batch's size
