"""The results of memory.manual (docs/design.md, section 8.1).

A refusal carries its reason in both `error` and `data.reason`, like the create results,
because a panel or a model may read either.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import UNSET

from contracts.kinds.manual import ADDED, IMPORTED, REMOVED, UNCHANGED, UPDATED
from contracts.op_result import OpData, OpResult
from contracts.result_parts import CacheKey
from worker.domain.op_result import done
from worker.kinds.manual.decided import Refuse


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
    return done(command_id, data, invalidated)


def imported(command_id: str, memory_ids: list[int], removed_count: int, skipped_duplicates: int,
             invalidated: Iterable[CacheKey]) -> OpResult:
    """Never `memory_id`, even for one row: an import's caller reads the list."""
    data = OpData(status=IMPORTED, memory_ids=list(memory_ids), removed_count=removed_count,
                  skipped_duplicates=skipped_duplicates)
    return done(command_id, data, invalidated)


def updated(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return done(command_id, OpData(status=UPDATED, memory_id=memory_id), invalidated)


def unchanged(command_id: str, memory_id: int) -> OpResult:
    # Nothing was written, so no cache holds anything stale.
    return done(command_id, OpData(status=UNCHANGED, memory_id=memory_id))


def removed(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return done(command_id, OpData(status=REMOVED, memory_id=memory_id), invalidated)
