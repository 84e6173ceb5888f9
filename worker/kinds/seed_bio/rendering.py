"""The results of memory.seed_bio: a skip is a normal outcome (`success` true) whose
`data.reason` says why nothing was written."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.kinds.seed_bio import SEEDED, SKIPPED
from contracts.op_result import OpData, OpResult
from contracts.result_parts import CacheKey
from worker.domain.op_result import done


def seeded(command_id: str, memory_id: int, invalidated: Iterable[CacheKey]) -> OpResult:
    return done(command_id, OpData(status=SEEDED, memory_id=memory_id), invalidated)


def skipped(command_id: str, reason: str) -> OpResult:
    return done(command_id, OpData(status=SKIPPED, reason=reason))
