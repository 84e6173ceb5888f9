"""A command's inbox row (memory_worker.processed_commands) as the worker reads it back:
memory_stored_command() decoded, the one shape every reader gets."""

from __future__ import annotations

import msgspec

from worker.kinds.create.record import CreateDecision, SaveSettled
from worker.kinds.update.record import UpdateDecision, UpdateRecord, UpdateSettled


class EventRow(msgspec.Struct, frozen=True):
    """One event as a command's inbox row keeps it (processed_commands.events) and as it is
    published: its subject, its headers (Nats-Msg-Id = its event id) and its JSON payload."""

    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw


class _InboxColumns(msgspec.Struct, frozen=True):
    """What every inbox row has, whatever its kind."""

    command_id: str
    kind: str
    workspace_id: str | None
    tenant: str
    event_time: str
    status: str | None = None
    result: str | None = None
    events: list[EventRow] | None = None
    applied_by: int | None = None


class StoredInboxRow(_InboxColumns, frozen=True):
    """A command as its inbox row stores it, read back: the one shape every reader gets
    (memory_stored_command(), db/functions/memory_stored_command.sql). What a service hands
    the applier to store is db/effects.py's InboxRow.

    A create keeps its `decision` and what its save learned under the lock (`facts`), an
    update its own (`update`: its decision and facts, another union, read by the row's kind:
    decode_inbox_row); their answer and events are rendered from them (worker/services/stored.py).
    Every other kind keeps its `result` as sent, with its `status`, and its `events` whole (so
    does a create stored before db/migrations/009_decisions.sql, which keeps its result).
    `applied_by` is the MEMORY_COMMANDS stream sequence of the delivery that applied it (None:
    unknown, or no delivery); `event_time` when its transaction ran."""

    decision: CreateDecision | None = None
    facts: SaveSettled | None = None
    update: UpdateRecord | None = None


_NULL = msgspec.Raw(b"null")


class RawInboxRow(_InboxColumns, frozen=True):
    """memory_stored_command() as it comes: its decision and facts left as JSON until its kind
    says whose union they are."""

    decision: msgspec.Raw = _NULL
    facts: msgspec.Raw = _NULL

    def decoded(self) -> StoredInboxRow:
        decision: CreateDecision | None = None
        facts: SaveSettled | None = None
        update: UpdateRecord | None = None
        if bytes(self.decision) != b"null":
            if self.kind == "update":
                update = UpdateRecord(_UPDATE_DECISION.decode(self.decision),
                                      None if bytes(self.facts) == b"null" else _UPDATE_FACTS.decode(self.facts))
            else:
                decision = _CREATE_DECISION.decode(self.decision)
                facts = None if bytes(self.facts) == b"null" else _SAVE_FACTS.decode(self.facts)
        shared = {name: getattr(self, name) for name in _InboxColumns.__struct_fields__}
        return StoredInboxRow(**shared, decision=decision, facts=facts, update=update)


_CREATE_DECISION = msgspec.json.Decoder(CreateDecision)
_SAVE_FACTS = msgspec.json.Decoder(SaveSettled)
_UPDATE_DECISION = msgspec.json.Decoder(UpdateDecision)
_UPDATE_FACTS = msgspec.json.Decoder(UpdateSettled)
_RAW_INBOX_ROW = msgspec.json.Decoder(RawInboxRow)


def decode_inbox_row(raw: str | bytes) -> StoredInboxRow:
    """A memory_stored_command() value: a create's decision and facts, or an update's, decoded as
    the row's kind says."""
    return _RAW_INBOX_ROW.decode(raw).decoded()


class BatchRow(msgspec.Struct, frozen=True):
    """One op's row of memory_create_batch(), in op order: the command as stored, by this op
    or (`duplicate`) by another delivery before it."""

    duplicate: bool
    stored: StoredInboxRow
