"""The arguments of the SQL functions that take one JSON document, as db/repository.py encodes them.

Each Struct is what one function reads with `p ->> 'key'` / `p -> 'key'`. A save's results
travel as JSON text cut where the database puts its facts (`saved_pieces`,
`evicted_pieces`), so it stores them as encoded and builds no jsonb.
tests/unit/test_sql_arguments.py names the Struct that feeds each function, reads the live
definition of the function in db/migrations/ and fails when it reads a key its Struct does not
have, so a key renamed on either side is caught before a create reads NULL.
"""

from __future__ import annotations

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
    "cut_result",
    "evicted_pieces",
    "saved_pieces",
]


def _span(base: str, other: str) -> tuple[int, int]:
    """Where `base` differs from `other`, an encoding of the same result with one value
    changed: the value's place in `base`, found by halving (slice compares, not a loop over
    characters). Whatever the strings around it hold, that is the one place they differ."""
    shorter = min(len(base), len(other))
    low, high = 0, shorter  # the common prefix's length is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if base[low:middle] == other[low:middle]:
            low = middle
        else:
            high = middle - 1
    prefix = low
    low, high = 0, shorter - prefix  # the common suffix's length, never overlapping the prefix
    while low < high:
        middle = (low + high + 1) // 2
        if base[len(base) - middle:len(base) - low] == other[len(other) - middle:len(other) - low]:
            low = middle
        else:
            high = middle - 1
    return prefix, len(base) - low


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


def cut_result(result: CommandResult, *variants: CommandResult) -> list[str]:
    """`result` as JSON, cut out where each of `variants` (the same result with one value
    changed) differs from it: the database puts its facts into the cuts and stores the
    pieces joined, building no jsonb, and the result is stored as the worker encoded it."""
    base = encode(result).decode()
    return _cut(base, [_span(base, encode(variant).decode()) for variant in variants])


def _with_data(result: CommandResult, **data: object) -> CommandResult:
    return msgspec.structs.replace(result, data=msgspec.structs.replace(result.data, **data))


# Values put where the database's facts go, which no result holds by chance: an encoding in
# which each appears exactly once is cut at them (one encode); one that holds a mark twice or
# more (a command quoting it) is cut by the differences of encodings instead (cut_result).
_ID_MARK = 7_331_913_557_194_620_181
_TEXT_MARK = "\u2063fact\u2063"
_NOTICE_MARK = {"\u2063notice\u2063": 0}
_MARKS = (str(_ID_MARK), encode(_TEXT_MARK).decode()[1:-1], encode(_NOTICE_MARK).decode())


def _cut_at_marks(text: str, marks: tuple[str, ...]) -> list[str] | None:
    spans = []
    for mark in marks:
        start = text.find(mark)
        if start < 0 or text.find(mark, start + 1) >= 0:
            return None
        spans.append((start, start + len(mark)))
    return _cut(text, spans)


def saved_pieces(result: CommandResult) -> list[str]:
    """A plain save's result cut where its memory id goes: [before, after]."""
    marked = encode(_with_data(result, memory_id=_ID_MARK)).decode()
    return (_cut_at_marks(marked, _MARKS[:1])
            or cut_result(_with_data(result, memory_id=0), _with_data(result, memory_id=1)))


def evicted_pieces(result: CommandResult) -> list[str]:
    """A save that evicts: its result cut where the new id, the forgotten content (inside its
    quotes, as escaped JSON) and the notice go, in that order: four pieces."""
    marked = msgspec.structs.replace(_with_data(result, memory_id=_ID_MARK, content_forgotten=_TEXT_MARK),
                                     notice=_NOTICE_MARK)
    pieces = _cut_at_marks(encode(marked).decode(), _MARKS)
    if pieces is not None:
        return pieces
    base = msgspec.structs.replace(_with_data(result, memory_id=0, content_forgotten=""), notice=None)
    return cut_result(base, _with_data(base, memory_id=1), _with_data(base, content_forgotten="x"),
                      msgspec.structs.replace(base, notice={}))


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
