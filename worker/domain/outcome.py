"""How a create's save can end, decided under the owner lock: one enum for Python and SQL.

The pure decision (worker/domain/create.py) runs before the lock; what only the locked
transaction can know (the owner's count, the eviction victim, privacy and host protection
read again) then picks one of these outcomes. The save request carries the finished result
of every outcome (`results_by_outcome`), keyed by the outcome's label; memory_create_save()
chooses a `memory_worker.save_outcome` (the same labels, db/migrations/002_save_outcome.sql)
and takes that result, filling in only the facts it alone has: the new memory id, the
forgotten content and its notice, the count a refusal reports. tests/integration/
test_save_outcome.py fails when the two label sets differ.
"""

from __future__ import annotations

from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain import messages
from worker.domain.create import limit_refusal
from worker.domain.model import Privacy, SaveOutcome, SavePlan
from worker.domain.notice import NoticePlan

__all__ = ["SQL_TYPE", "SaveOutcome", "reachable_outcomes", "results_by_outcome"]

SQL_TYPE = "memory_worker.save_outcome"


def results_by_outcome(cmd: CreateMemory, plan: SavePlan, notice: NoticePlan) -> dict[SaveOutcome, CommandResult]:
    """Every result the save may give, each finished but for the database's facts.

    Only the outcomes this save can reach are carried (`reachable_outcomes`): every one is
    built, encoded and parsed by the database on each create, whichever it picks. At the cap,
    `plan.eviction_blocked` says why no row may be replaced (None: one may, and at_cap then
    means nothing was eligible). `notice` is the plain save's notice; the eviction's notice is
    made by the database from the template the request carries (worker/domain/eviction_notice.py).
    """
    label = plan.target_label or plan.owner_id
    reachable = reachable_outcomes(plan)
    saved = messages.saved(cmd, plan, 0, None)
    saved.notice = dict(notice)
    results = {
        SaveOutcome.SAVED: saved,
        # data.current_count is the count read under the lock: set by the database.
        SaveOutcome.AT_CAP: limit_refusal(cmd, plan, "refuse_at_cap"),
        SaveOutcome.OVER_CAP: limit_refusal(cmd, plan, "refuse_over_cap"),
    }
    if SaveOutcome.SAVED_WITH_EVICTION in reachable:
        results[SaveOutcome.SAVED_WITH_EVICTION] = messages.saved(cmd, plan, 0, "")
    if SaveOutcome.PRIVACY_FULL in reachable:
        results[SaveOutcome.PRIVACY_PARTIAL] = messages.privacy_restricted(cmd, label, Privacy.PARTIAL)
        results[SaveOutcome.PRIVACY_FULL] = messages.privacy_restricted(cmd, label, Privacy.FULL)
        results[SaveOutcome.HOST_PROTECTED] = messages.host_protected(cmd, label, "a host's protection changed while saving")
    return results


def reachable_outcomes(plan: SavePlan) -> frozenset[SaveOutcome]:
    """The outcomes memory_create_save() can pick for this plan: an eviction only when the plan
    permits one (the SQL looks for a victim only then), privacy and host protection only for a
    person's memories (read again under the lock only in the personal scope)."""
    reachable = {SaveOutcome.SAVED, SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP}
    if plan.may_evict:
        reachable.add(SaveOutcome.SAVED_WITH_EVICTION)
    if plan.scope == "personal":
        reachable |= {SaveOutcome.PRIVACY_PARTIAL, SaveOutcome.PRIVACY_FULL, SaveOutcome.HOST_PROTECTED}
    return frozenset(reachable)
