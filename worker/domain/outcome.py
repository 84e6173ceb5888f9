"""How a create's save can end, decided under the owner lock: one enum for Python and SQL.

The pure decision (worker/domain/create.py) runs before the lock; what only the locked
transaction can know (the owner's count, the eviction victim, privacy and host protection
read again) then picks one of these outcomes (memory_worker.save_outcome, the same labels,
db/migrations/002_save_outcome.sql; tests/integration/test_save_outcome.py fails when the two
label sets differ). Two outcomes write: the save request carries their results
(worker/domain/save.py), which the database completes with what it alone knows (the new id;
after an eviction the forgotten content and its notice). The others write nothing, and their
result is worded here once the database has reported the outcome and the count it read.
"""

from __future__ import annotations

from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain import messages
from worker.domain.create import limit_refusal
from worker.domain.model import Privacy, SaveOutcome, SavePlan

__all__ = ["SQL_TYPE", "WRITES", "SaveOutcome", "refused_under_lock"]

SQL_TYPE = "memory_worker.save_outcome"

# The outcomes in which the save wrote its memory (and stored its result with it).
WRITES = frozenset({SaveOutcome.SAVED, SaveOutcome.SAVED_WITH_EVICTION})


def refused_under_lock(cmd: CreateMemory, plan: SavePlan, outcome: SaveOutcome, count: int | None) -> CommandResult:
    """The result of a save that ended writing nothing: `count` is the owner's count the
    database read under the lock (None when it stopped before counting: privacy, a host).
    At the cap, `plan.eviction_blocked` says why no row may be replaced (None: one may, and
    at_cap then means nothing was eligible)."""
    label = plan.target_label or plan.owner_id
    if outcome in (SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP) and count is None:
        raise ValueError(f"{outcome} was reported without the count read under the lock")
    match outcome:
        case SaveOutcome.AT_CAP:
            return limit_refusal(cmd, plan, "refuse_at_cap", count or 0)
        case SaveOutcome.OVER_CAP:
            return limit_refusal(cmd, plan, "refuse_over_cap", count or 0)
        case SaveOutcome.PRIVACY_PARTIAL:
            return messages.privacy_restricted(cmd, label, Privacy.PARTIAL)
        case SaveOutcome.PRIVACY_FULL:
            return messages.privacy_restricted(cmd, label, Privacy.FULL)
        case SaveOutcome.HOST_PROTECTED:
            return messages.host_protected(cmd, label, "a host's protection changed while saving")
    raise ValueError(f"{outcome} writes: its result is the save's, not a refusal")
