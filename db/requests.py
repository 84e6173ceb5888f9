"""The arguments of the SQL functions that take one JSON document, as db/repository.py encodes them.

Each Struct is what one function reads with `p ->> 'key'` / `p -> 'key'`. A save's results
travel as JSON text cut where the database puts its facts (`saved_pieces`,
`evicted_pieces`), so it stores them as encoded and builds no jsonb.
tests/unit/test_sql_arguments.py names the Struct that feeds each function, reads the live
definition of the function in db/migrations/ and fails when it reads a key its Struct does not
have, so a key renamed on either side is caught before a create reads NULL.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

import msgspec

from contracts.codec import encode
from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain.events import EvictionFacts, SavedFacts
from worker.domain.eviction_notice import EvictionNoticeTemplate
from worker.domain.model import Scope
from worker.domain.save import CreateSave, EvictionPlan

__all__ = [
    "CreateBatchRequest",
    "CreateContextRequest",
    "CreateSaveRequest",
    "ManualContextRequest",
    "EvictionRequest",
    "RecordOp",
    "evicted_pieces",
    "saved_pieces",
]


def _cut(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """`text` without the spans, in pieces. The spans come in the order the database fills
    them; should the contract's field order ever put them otherwise, this fails instead of
    letting a fact land in another's place."""
    if spans != sorted(spans):
        raise ValueError("the result's fields are not in the order the database fills them in")
    pieces, at = [], 0
    for start, end in spans:
        pieces.append(text[at:start])
        at = end
    pieces.append(text[at:])
    return pieces


def _with_data(result: CommandResult, **data: object) -> CommandResult:
    return msgspec.structs.replace(result, data=msgspec.structs.replace(result.data, **data))


class _Marks(NamedTuple):
    """Values put where the database's facts go (the new id, the forgotten content, the
    notice), drawn afresh for each result: the result is encoded once with them and cut where
    they are. A command cannot quote a value drawn after it was written, so a mark turns up
    twice only by chance, and then new marks are drawn."""

    memory_id: int
    text: str
    notice: dict[str, int]

    def found_as(self) -> tuple[str, str, str]:
        """How each mark reads in the result's JSON (the text's inside its quotes)."""
        return str(self.memory_id), encode(self.text).decode()[1:-1], encode(self.notice).decode()


def _fresh_marks() -> _Marks:
    token = f"{random.getrandbits(64):016x}\u2063"
    # Told apart by their first letter: neither the text's nor the notice's is in the other.
    return _Marks(random.randrange(10**18, 2**63), f"\u2063t{token}", {f"\u2063n{token}": 0})


# Draws before a result is taken for one the database cannot fill: a chance clash is about
# 10^-18 a draw, so only a result with no single place for a fact (a contract change) gets here.
_DRAWS = 3


def _cut_at_marks(marked: Callable[[_Marks], CommandResult], facts: int) -> list[str]:
    """The result `marked` builds with fresh marks in its first `facts` places, cut at them."""
    for _ in range(_DRAWS):
        marks = _fresh_marks()
        text = encode(marked(marks)).decode()
        spans = []
        for found in marks.found_as()[:facts]:
            start = text.find(found)
            if start < 0 or text.find(found, start + 1) >= 0:
                break
            spans.append((start, start + len(found)))
        else:
            return _cut(text, spans)
    raise ValueError("the result has no single place for each of the database's facts")


def saved_pieces(result: CommandResult) -> list[str]:
    """A plain save's result cut where its memory id goes: [before, after]."""
    return _cut_at_marks(lambda marks: _with_data(result, memory_id=marks.memory_id), 1)


def evicted_pieces(result: CommandResult) -> list[str]:
    """A save that evicts: its result cut where the new id, the forgotten content (inside its
    quotes, as escaped JSON) and the notice go, in that order: four pieces."""
    return _cut_at_marks(lambda marks: msgspec.structs.replace(
        _with_data(result, memory_id=marks.memory_id, content_forgotten=marks.text), notice=marks.notice), 3)


class EvictionRequest(msgspec.Struct, frozen=True):
    """What a save that may evict stores when it does: its result in four pieces
    (`evicted_pieces`), the notice's template and the facts its events add."""

    status: str
    result: list[str]
    notice: EvictionNoticeTemplate
    facts: EvictionFacts

    @classmethod
    def of(cls, plan: EvictionPlan) -> EvictionRequest:
        return cls(plan.result.data.status, evicted_pieces(plan.result), plan.notice, plan.facts)


class CreateContextRequest(msgspec.Struct, frozen=True):
    """One element of memory_create_contexts()'s array: memory_create_context()'s arguments."""

    command_id: str
    workspace_id: str
    ids: list[str]
    lineage_id: int


class CreateSaveRequest(msgspec.Struct, frozen=True, tag_field="type", tag="save"):
    """A save in memory_create_batch(): the plan, and what the save stores when it writes.

    The plain save's result travels as text cut at its memory id (`saved_pieces`) and is
    stored as the worker encoded it; a save that may evict also carries the eviction's
    (`EvictionRequest`), which the database completes with the forgotten row and the notice
    it makes from the template. `facts` are stored with the result for the events
    (worker/domain/events.py, `create_events`); after an eviction with `eviction.facts` and
    the forgotten row's id.
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
    result: list[str]  # saved_pieces()
    facts: SavedFacts
    eviction: EvictionRequest | None  # set exactly when the save may evict
    # The MEMORY_COMMANDS stream sequence of the delivery applying the command, stored with
    # its result (worker/services/base.py, republishes()); None without a delivery.
    applied_by: int | None = None

    @classmethod
    def of(cls, cmd: CreateMemory, save: CreateSave, applied_by: int | None = None) -> CreateSaveRequest:
        """A model's save as the SQL reads it."""
        plan = save.plan
        return cls(
            command_id=cmd.command_id, workspace_id=cmd.workspace_id, scope=plan.scope, owner_id=plan.owner_id,
            user_id=plan.user_id, teacher_id=save.teacher_id, lineage_id=plan.lineage_id, persona_id=plan.persona_id,
            content=plan.content, cap=plan.cap, proxy=save.proxy, status=save.result.data.status,
            result=saved_pieces(save.result), facts=save.facts,
            eviction=None if save.eviction is None else EvictionRequest.of(save.eviction), applied_by=applied_by,
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
