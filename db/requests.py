"""The arguments of the SQL functions that take one JSON document, as db/repository.py encodes them.

Each Struct is what one function reads with `p ->> 'key'` / `p -> 'key'`.
tests/unit/test_sql_arguments.py names the Struct that feeds each function, reads the live
definition of the function in db/migrations/ and fails when it reads a key its Struct does not
have, so a key renamed on either side is caught before a create reads NULL.
"""

from __future__ import annotations

import msgspec

from contracts.codec import encode
from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain.events import SavedFacts
from worker.domain.model import Scope
from worker.domain.save import CreateSave, EvictionPlan

__all__ = [
    "CreateBatchRequest",
    "CreateContextRequest",
    "CreateSaveRequest",
    "ManualContextRequest",
    "RecordOp",
    "split_at_memory_id",
]


def split_at_memory_id(result: CommandResult) -> tuple[str, str]:
    """A save's result as JSON, cut where its memory id goes: the database stores head, the
    new id and tail, and parses nothing. Encoded with two ids, the two encodings differ in
    exactly one place, the id's, whatever the strings around it hold."""
    zero = encode(msgspec.structs.replace(result, data=msgspec.structs.replace(result.data, memory_id=0))).decode()
    one = encode(msgspec.structs.replace(result, data=msgspec.structs.replace(result.data, memory_id=1))).decode()
    low, high = 0, len(zero) - 1  # the one difference is in zero[low:high + 1]: halved by slice compares
    while low < high:
        middle = (low + high) // 2
        if zero[low:middle + 1] == one[low:middle + 1]:
            low = middle + 1
        else:
            high = middle
    return zero[:low], zero[low + 1:]


class CreateContextRequest(msgspec.Struct, frozen=True):
    """One element of memory_create_contexts()'s array: memory_create_context()'s arguments."""

    command_id: str
    workspace_id: str
    ids: list[str]
    lineage_id: int


class CreateSaveRequest(msgspec.Struct, frozen=True, tag_field="type", tag="save"):
    """A save in memory_create_batch(): the plan, and what the save stores when it writes.

    The plain save's result travels as text cut at its memory id (`split_at_memory_id`), and
    is stored as it was encoded; a save that may evict also carries the eviction's result and
    notice template, which the database completes with the forgotten row. `facts` are stored
    with the result for the events (worker/domain/events.py, `create_events`); after an
    eviction with `eviction.facts` and the forgotten row's id.
    """

    command_id: str
    workspace_id: str
    scope: Scope
    owner_id: str
    user_id: int | None
    teacher_id: str | None
    lineage_id: int
    persona_id: int
    content: str
    cap: int
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    status: str  # the plain save's data.status
    result_head: str
    result_tail: str
    facts: SavedFacts
    eviction: EvictionPlan | None  # set exactly when the save may evict
    # The MEMORY_COMMANDS stream sequence of the delivery applying the command, stored with
    # its result (worker/services/base.py, republishes()); None without a delivery.
    applied_by: int | None = None

    @classmethod
    def of(cls, cmd: CreateMemory, save: CreateSave, applied_by: int | None = None) -> CreateSaveRequest:
        """A model's save as the SQL reads it."""
        plan = save.plan
        head, tail = split_at_memory_id(save.result)
        return cls(
            command_id=cmd.command_id, workspace_id=cmd.workspace_id, scope=plan.scope, owner_id=plan.owner_id,
            user_id=plan.user_id, teacher_id=save.teacher_id, lineage_id=plan.lineage_id, persona_id=plan.persona_id,
            content=plan.content, cap=plan.cap, proxy=save.proxy, status=save.result.data.status,
            result_head=head, result_tail=tail, facts=save.facts, eviction=save.eviction, applied_by=applied_by,
        )

    @property
    def owner(self) -> tuple[str, str]:
        """(scope, owner id): the lock the save takes."""
        return (self.scope, self.owner_id)


class RecordOp(msgspec.Struct, frozen=True, tag_field="type", tag="record"):
    """A refusal in memory_create_batch(): its result stored as encoded (`result`, JSON text),
    nothing else written."""

    command_id: str
    workspace_id: str
    status: str
    result: str

    @classmethod
    def of(cls, command_id: str, workspace_id: str, result: CommandResult) -> RecordOp:
        return cls(command_id, workspace_id, result.data.status, encode(result).decode())


class CreateBatchRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_batch(): the owners to lock first, in lock order, then the ops."""

    owners: list[tuple[str, str]]
    ops: list[CreateSaveRequest | RecordOp]


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
