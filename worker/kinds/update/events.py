"""A memory.update's events, built from what its inbox row stores, as a create's are."""

from __future__ import annotations

from worker.domain.events import EventTemplate, invalidations, removed, updated
from worker.domain.owner import cache_key
from worker.kinds.update.notice import update_notice
from worker.kinds.update.record import UpdateOutcome, UpdatePlan, UpdateSettled


def update_events(command_id: str, workspace_id: str, plan: UpdatePlan, settled: UpdateSettled, occurred_at: str
                  ) -> list[EventTemplate]:
    """The events of a memory.update, in publish order: the invalidation first, then
    memory.updated for an edit or memory.removed for a delete; none for one that changed
    nothing. Built from what the inbox row stores, as a create's are."""
    if settled.outcome not in (UpdateOutcome.UPDATED, UpdateOutcome.DELETED):
        return []
    if settled.content_before is None or settled.lineage_id is None or settled.source is None:
        raise ValueError(f"the update of {command_id!r} was stored without the row it changed")
    deleted = settled.outcome == UpdateOutcome.DELETED
    scope, owner = plan.scope, plan.owner_id
    out = invalidations(command_id, [cache_key(scope, owner)], occurred_at,
                        "memory_deleted" if deleted else "memory_updated")
    if deleted:
        out.append(removed(command_id, occurred_at, scope=scope, owner_id=owner, lineage_id=settled.lineage_id,
                           memory_id=plan.memory_id, content=settled.content_before))
    elif plan.content is not None:
        out.append(updated(command_id, occurred_at, scope=scope, workspace_id=workspace_id, owner_id=owner,
                           lineage_id=settled.lineage_id, memory_id=plan.memory_id, content=plan.content,
                           content_before=settled.content_before, source=settled.source,
                           manually_written=bool(settled.manually_written), notice=update_notice(plan, settled)))
    return out
