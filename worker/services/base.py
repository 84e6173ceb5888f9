"""What every command service gives the handler, and how any of them answers a repeat."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, overload

import asyncpg
import msgspec

from contracts.codec import RESULT_DECODER, encode
from contracts.commands import CreateMemory, Envelope
from db.repository import EventRow, Stored
from worker.domain import messages
from worker.domain.events import EventTemplate, create_events


@dataclass(frozen=True, slots=True)
class Handled:
    """What the handler does after the database: publish `events` (stored in MEMORY_EVENTS
    before anything else), then reply `result`, then acknowledge."""

    result: bytes
    events: list[EventRow]
    duplicate: bool


# The command type a service takes: each service takes its own kind's (contracts/registry.py).
C_contra = TypeVar("C_contra", bound=Envelope, contravariant=True)


class CommandService(Protocol[C_contra]):
    async def run(self, cmd: C_contra, delivery: int | None = None) -> Handled:
        """Apply the command once (the inbox answers repeats) and return what to publish.

        `delivery`: the MEMORY_COMMANDS stream sequence of the message being handled, stored
        with the command's events so that only a redelivery of this message publishes them
        again (republishes()); None for a caller without a delivery.
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


def published_events(cmd: Envelope, stored: Stored) -> list[EventRow]:
    """The events of a stored command, as it published them: kept whole in its inbox row
    (every kind but a create, and a create stored before db/migrations/007_compact_save.sql),
    or for a create rebuilt from its stored result (a refusal has none), the facts only its
    save knew and the time its transaction ran. The first publish and every republish build
    them here, so they are the same events."""
    if stored.events or stored.kind != "create":
        return stored.events
    result = RESULT_DECODER.decode(stored.result)
    if not result.success:
        return []
    if not isinstance(cmd, CreateMemory) or stored.event_time is None:
        raise ValueError(f"{cmd.command_id!r} was stored by a create's save: its events are built from the create")
    return event_rows(create_events(cmd, result, stored.facts, stored.event_time))


def republishes(stored: Stored, delivery: int | None) -> bool:
    """Does answering this delivery of a command seen before publish its stored events again?

    The rule: only a delivery of the very stream message that applied the command does
    (`delivery` is that message's MEMORY_COMMANDS sequence, stored as `applied_by`).

    Why that is enough: a message is acknowledged only after its command's events were
    stored in MEMORY_EVENTS (the handler publishes, then replies, then acks; the give-up path
    publishes before it acks too). So a message that comes back may have died between commit
    and publish, and its redelivery publishes the events; should they have been stored after
    all (the crash came between publish and ack), each carries Nats-Msg-Id = its event id and
    the stream stores it once within its duplicate window (DUPLICATE_WINDOW_S, 10 minutes; a
    redelivery comes ACK_WAIT_SECONDS after the delivery). The one case left: events stored,
    the ack lost, and the redelivery more than the window later (a NATS outage between
    publish and ack that outlasts it) stores them twice, as the outbox's sweeper did when a
    worker died between publishing and marking its rows.

    Why no other message may: for a different message with the same command id (a bot
    re-sending under a derived message id, a dead letter replayed days later), the message
    that applied the command was either acknowledged, so the events are stored already,
    perhaps longer ago than the duplicate window, and publishing them again would store them
    twice; or it is still unacknowledged, and its own redelivery publishes them. A row stored
    before the events moved into the inbox (applied_by None) never republishes: its events
    are in the old outbox table, which start-up drains.
    """
    return delivery is not None and stored.applied_by == delivery


@overload
def seen_before(cmd: Envelope, stored: Stored, tenant: str, delivery: int | None = None) -> Handled: ...
@overload
def seen_before(cmd: Envelope, stored: Stored | None, tenant: str, delivery: int | None = None) -> Handled | None: ...
def seen_before(cmd: Envelope, stored: Stored | None, tenant: str, delivery: int | None = None) -> Handled | None:
    """Was this command seen before? The one place that decides; every path that can find a
    stored result asks here: the create's context read and its locked save (which may find a
    racing delivery's result), a refusal's store, and the other commands' locked read.

    `tenant`: the bot this worker serves ('' for none), which a stored row must have been
    stored for to be this command's. None: not seen, go on. Otherwise the answer: the stored
    result, with the stored events when this delivery republishes them (republishes()).
    Command ids must be unique across
    workspaces and bots; a clash is refused rather than answered with another workspace's or
    another bot's result.
    """
    if stored is None:
        return None
    if stored.tenant != tenant or (stored.workspace_id is not None and stored.workspace_id != cmd.workspace_id):
        reason = "command_id was already used by a command of another workspace or another bot: use a fresh, unique id"
        return Handled(encode(messages.invalid_command(cmd.command_id, reason)), [], duplicate=True)
    return Handled(stored.result, published_events(cmd, stored) if republishes(stored, delivery) else [],
                   duplicate=True)


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
