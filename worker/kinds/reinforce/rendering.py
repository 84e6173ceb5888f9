"""The result of memory.reinforce."""

from __future__ import annotations

from contracts.kinds.reinforce import REINFORCED
from contracts.op_result import OpData, OpResult
from worker.domain.op_result import done


def reinforced(command_id: str, count: int) -> OpResult:
    # Reinforcement changes nothing a bot shows: no cache invalidation (docs/design.md, section 8.2).
    return done(command_id, OpData(status=REINFORCED, count=count))
