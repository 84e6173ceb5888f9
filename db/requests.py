"""The arguments of the SQL functions that take one JSON document, as db/repository.py encodes them.

Each Struct is what one function reads with `p ->> 'key'` / `p -> 'key'`.
tests/unit/test_sql_arguments.py names the Struct that feeds each function, reads the live
definition of the function in db/migrations/ and fails when it reads a key its Struct does not
have, so a key renamed on either side is caught before a create reads NULL.
"""

from __future__ import annotations

import msgspec

from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain.events import EventTemplate
from worker.domain.eviction_notice import EvictionNoticeTemplate
from worker.domain.model import SaveOutcome, Scope
from worker.domain.save import CreateSave

__all__ = [
    "CreateBatchRequest",
    "EventOut",
    "CreateContextRequest",
    "CreateSaveRequest",
    "ManualContextRequest",
    "RecordOp",
    "SaveOp",
]


class EventOut(msgspec.Struct, frozen=True):
    """An event as a command's inbox row stores it and as it is published (db.repository.EventRow)."""

    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw | object


def split_events(templates: list[EventTemplate]) -> tuple[list[EventOut], int, list[EventOut]]:
    """A save's planned events (worker/domain/events.py, save_events) as memory_create_save
    takes them: every save's, the index of memory.saved among them, and an eviction's own
    (memory.evicted first)."""
    always = [t for t in templates if not t.only_on_evict]
    evicting = [t for t in templates if t.only_on_evict]
    saved_at = next(i for i, t in enumerate(always) if t.fill == "saved")
    if not evicting or evicting[0].fill != "evicted":
        raise ValueError("an eviction's events start with memory.evicted")
    return ([EventOut(t.subject, t.headers, t.payload) for t in always], saved_at,
            [EventOut(t.subject, t.headers, t.payload) for t in evicting])


class CreateContextRequest(msgspec.Struct, frozen=True):
    """One element of memory_create_contexts()'s array: memory_create_context()'s arguments."""

    command_id: str
    workspace_id: str
    ids: list[str]
    lineage_id: int


class CreateSaveRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_save(): the plan, the result of every outcome, the events."""

    command_id: str
    scope: Scope
    owner_id: str
    workspace_id: str
    user_id: int | None
    teacher_id: str | None
    lineage_id: int
    persona_id: int
    content: str
    source: str
    manually_written: bool
    cap: int
    may_evict: bool
    decay_days: int
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    results: dict[SaveOutcome, CommandResult]
    # The events as stored and published, in order, but for what only the save knows: every
    # save's (invalidations, then memory.saved at `saved_at`, whose memory_id, and after an
    # eviction evicted and notice, the SQL sets), then an eviction's own (memory.evicted, its
    # ids and content set by the SQL, and the eviction metric), appended only on eviction.
    events: list[EventOut]
    saved_at: int
    eviction_events: list[EventOut]
    eviction_notice: EvictionNoticeTemplate | None  # set exactly when the save may evict
    # The MEMORY_COMMANDS stream sequence of the delivery applying the command, stored with
    # its events (worker/services/base.py, republishes()); None without a delivery.
    applied_by: int | None = None

    @classmethod
    def of(cls, cmd: CreateMemory, save: CreateSave, applied_by: int | None = None) -> CreateSaveRequest:
        """A model's save (source "model", never written by hand) as the SQL reads it."""
        plan = save.plan
        events, saved_at, eviction_events = split_events(save.events)
        return cls(
            command_id=cmd.command_id, scope=plan.scope, owner_id=plan.owner_id, workspace_id=cmd.workspace_id,
            user_id=plan.user_id, teacher_id=save.teacher_id, lineage_id=plan.lineage_id,
            persona_id=plan.persona_id, content=plan.content, source="model", manually_written=False,
            cap=plan.cap, may_evict=plan.may_evict, decay_days=plan.decay_days, proxy=save.proxy,
            results=save.results, events=events, saved_at=saved_at, eviction_events=eviction_events,
            eviction_notice=save.eviction_notice, applied_by=applied_by,
        )

    @property
    def owner(self) -> tuple[str, str]:
        """(scope, owner id): the lock the save takes."""
        return (self.scope, self.owner_id)


class RecordOp(msgspec.Struct, frozen=True):
    """A refusal in memory_create_batch(): memory_record_result()'s arguments."""

    command_id: str
    workspace_id: str
    result: CommandResult


class SaveOp(msgspec.Struct, frozen=True):
    """A save in memory_create_batch(): memory_create_save(plan)."""

    plan: CreateSaveRequest


class CreateBatchRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_batch(): the owners to lock first, in lock order, then the ops."""

    owners: list[tuple[str, str]]
    ops: list[RecordOp | SaveOp]


class ManualContextRequest(msgspec.Struct, frozen=True):
    """The argument of memory_manual_context()."""

    scope: Scope
    workspace_id: str
    owner_id: str
    actor_id: str
    identity_id: str | None
    lineage_id: int
    memory_id: int | None
    want_existing: bool
