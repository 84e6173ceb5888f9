"""Results of `memory.manual`, `memory.reinforce` and `memory.seed_bio` (docs/design.md, section 8).

Each builder fills exactly the `OpData` fields its status calls for; the others stay unset and
are left out of the JSON. A refusal carries its reason in both `error` and `data.reason`,
like the create results, because a panel or a model may read either. A skip is a normal
outcome (`success` true) whose `data.reason` says why nothing was written.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import UNSET

from contracts.kinds.manual import ADDED, IMPORTED, REMOVED, UNCHANGED, UPDATED
from contracts.kinds.reinforce import REINFORCED
from contracts.kinds.seed_bio import SEEDED, SKIPPED
from contracts.op_result import OpData, OpResult
from contracts.result_parts import FAILED, CacheKey
from worker.domain.model import Refuse

__all__ = [
    "added",
    "failed",
    "imported",
    "refused",
    "reinforced",
    "removed",
    "seeded",
    "skipped",
    "unchanged",
    "updated",
]

def _done(command_id: str, data: OpData, invalidated: Iterable[CacheKey] = ()) -> OpResult:
    return OpResult(command_id=command_id, success=True, data=data, invalidated=list(invalidated))


def refused(command_id: str, refuse: Refuse) -> OpResult:
    return OpResult(
        command_id=command_id,
        success=False,
        error=refuse.reason,
        data=OpData(
            status=refuse.status,
            reason=refuse.reason,
            available=refuse.extra.get("available", UNSET),
            requested=refuse.extra.get("requested", UNSET),
        ),
    )


def added(
    command_id: str,
    memory_ids: list[int],
    invalidated: Iterable[CacheKey],
    skipped_duplicates: int = 0,
) -> OpResult:
    """`memory_id` too when exactly one row was added: a single add's caller reads just that."""
    data = OpData(
        status=ADDED,
        memory_id=memory_ids[0] if len(memory_ids) == 1 else UNSET,
        memory_ids=list(memory_ids),
        skipped_duplicates=skipped_duplicates,
    )
    return _done(command_id, data, invalidated)


def imported(command_id: str, memory_ids: list[int], removed_count: int, skipped_duplicates: int,
             invalidated: Iterable[CacheKey]) -> OpResult:
    """Never `memory_id`, even for one row: an import's caller reads the list."""
    data = OpData(status=IMPORTED, memory_ids=list(memory_ids), removed_count=removed_count,
                  skipped_duplicates=skipped_duplicates)
    return _done(command_id, data, invalidated)


def updated(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return _done(command_id, OpData(status=UPDATED, memory_id=memory_id), invalidated)


def unchanged(command_id: str, memory_id: int) -> OpResult:
    # Nothing was written, so no cache holds anything stale.
    return _done(command_id, OpData(status=UNCHANGED, memory_id=memory_id))


def removed(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return _done(command_id, OpData(status=REMOVED, memory_id=memory_id), invalidated)


def reinforced(command_id: str, count: int) -> OpResult:
    # Reinforcement changes nothing a bot shows: no cache invalidation (docs/design.md, section 8.2).
    return _done(command_id, OpData(status=REINFORCED, count=count))


def seeded(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return _done(command_id, OpData(status=SEEDED, memory_id=memory_id), invalidated)


def skipped(command_id: str, reason: str) -> OpResult:
    return _done(command_id, OpData(status=SKIPPED, reason=reason))


def failed(command_id: str, reason: str) -> OpResult:
    """The answer for a command the worker gave up on after its retries (it went to the DLQ)."""
    return OpResult(command_id=command_id, success=False, error=reason, data=OpData(status=FAILED, reason=reason))
