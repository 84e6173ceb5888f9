"""What a stored command answers and publishes: the one place either is made from its inbox row.

The reply to a command, every repeat of it, the give-up path's answer and the result lookup
all take `answer(stored)`; the first publish of its events and every republish take
`published_events(stored)`. A create's row keeps its decision and what its save learned
(worker/kinds/create/record.py), an update's its own (worker/kinds/update/record.py),
from which both are rendered, the same way every time (worker/kinds/create/rendering.py,
worker/kinds/update/rendering.py, each kind's events.py); every other kind keeps its result as sent and its events whole.
"""

from __future__ import annotations

from typing import overload

import structlog

from contracts.codec import encode
from contracts.envelope import Envelope
from contracts.kinds.create import SAVED, SAVED_WITH_EVICTION
from db.inbox import EventRow, StoredInboxRow
from worker.kinds.create import texts
from worker.kinds.create.events import create_events
from worker.kinds.create.record import CreateSecretRefused, SavePlan
from worker.kinds.create.rendering import render_create
from worker.kinds.update.events import update_events
from worker.kinds.update.record import UpdatePlan, UpdateRecord, UpdateSecretRefused
from worker.kinds.update.rendering import render_update
from worker.services.base import Answer, Handled, event_rows

log = structlog.get_logger("worker")


def answer(stored: StoredInboxRow) -> Answer:
    """The command's answer, as first sent and as every repeat and lookup gets it."""
    if stored.kind == "update":
        record = _update_record(stored)
        rendered = render_update(stored.command_id, record.decision, record.settled)
        return Answer(encode(rendered), rendered.data.status, None,
                      record.decision.kind if isinstance(record.decision, UpdateSecretRefused) else None)
    if stored.decision is not None:
        result = render_create(stored.command_id, stored.decision, stored.facts)
        status = result.data.status
        return Answer(encode(result), status, result.data.scope if status == SAVED_WITH_EVICTION else None,
                      stored.decision.kind if isinstance(stored.decision, CreateSecretRefused) else None,
                      created_for=(stored.decision.scope, stored.decision.owner_id)
                      if isinstance(stored.decision, SavePlan) else None)
    if stored.result is None or stored.status is None:  # the table's CHECK keeps one or the other
        raise ValueError(f"{stored.command_id!r} is stored with neither a result nor a decision")
    return Answer(stored.result.encode(), stored.status)


def published_events(stored: StoredInboxRow) -> list[EventRow]:
    """The command's events, in publish order: kept whole in its row, or for a create rendered
    from its decision (none for a refusal). The first publish and every republish build them
    here, so they are the same events."""
    if stored.events is not None:
        return stored.events
    if stored.kind == "update":
        record = _update_record(stored)
        if not isinstance(record.decision, UpdatePlan):
            return []
        if record.settled is None or stored.workspace_id is None:
            raise ValueError(f"the update of {stored.command_id!r} was stored without its settled outcome or workspace")
        return event_rows(update_events(stored.command_id, stored.workspace_id, record.decision, record.settled,
                                        stored.event_time))
    if isinstance(stored.decision, SavePlan):
        if stored.facts is None or stored.workspace_id is None:
            raise ValueError(f"the save of {stored.command_id!r} was stored without its settled outcome or workspace")
        return event_rows(create_events(stored.command_id, stored.workspace_id, stored.decision, stored.facts,
                                        stored.event_time))
    if stored.decision is None and stored.status in (SAVED, SAVED_WITH_EVICTION):
        # A save stored by a release before db/migrations/009_decisions.sql, redelivered by the
        # message that applied it: its events were built from the command by code since gone.
        # CHANGELOG.md ("Upgrade") says how an upgrade leaves no such message behind. This
        # legacy branch is removed in 0.3.0 (CHANGELOG.md, "Deprecated").
        log.error("events_not_rebuilt", command_id=stored.command_id,
                  reason="saved by a release before migration 009 and redelivered after the upgrade")
    return []


def _update_record(stored: StoredInboxRow) -> UpdateRecord:
    if stored.update is None:  # every update row keeps its decision (db/inbox.py, decode_inbox_row)
        raise ValueError(f"the update {stored.command_id!r} is stored without its decision")
    return stored.update


def republishes(stored: StoredInboxRow, delivery: int | None) -> bool:
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
    publish and ack that outlasts it) stores them twice.

    Why no other message may: for a different message with the same command id (a bot
    re-sending under a derived message id, a dead letter replayed days later), the message
    that applied the command was either acknowledged, so the events are stored already,
    perhaps longer ago than the duplicate window, and publishing them again would store them
    twice; or it is still unacknowledged, and its own redelivery publishes them.
    """
    return delivery is not None and stored.applied_by == delivery


@overload
def seen_before(cmd: Envelope, stored: StoredInboxRow, tenant: str, delivery: int | None = None) -> Handled: ...
@overload
def seen_before(cmd: Envelope, stored: StoredInboxRow | None, tenant: str,
                delivery: int | None = None) -> Handled | None: ...
def seen_before(cmd: Envelope, stored: StoredInboxRow | None, tenant: str, delivery: int | None = None) -> Handled | None:
    """Was this command seen before? The one place that decides; every path that can find a
    stored command asks here: the create's context read and its batch write (which may find
    a racing delivery's row), and the other commands' locked read.

    `tenant`: the bot this worker serves ('' for none), which a stored row must have been
    stored for to be this command's. None: not seen, go on. Otherwise the answer: the stored
    one, with the events when this delivery republishes them (republishes()). Command ids
    must be unique across workspaces and bots; a clash is refused rather than answered with
    another workspace's or another bot's result.
    """
    if stored is None:
        return None
    if stored.tenant != tenant or (stored.workspace_id is not None and stored.workspace_id != cmd.workspace_id):
        reason = "command_id was already used by a command of another workspace or another bot: use a fresh, unique id"
        invalid = texts.invalid_command(cmd.command_id, reason)
        return Handled(Answer(encode(invalid), invalid.data.status), [], duplicate=True)
    return Handled(answer(stored), published_events(stored) if republishes(stored, delivery) else [], duplicate=True)
