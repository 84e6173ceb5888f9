"""A create's events, built after its save from what its inbox row stores: its decision and
what the save learned under the lock. So a redelivery that publishes them again
(worker/services/stored.py) builds the very same events from the same row."""

from __future__ import annotations

from contracts import subjects
from contracts.events import EvictedMemory, MemoryEvicted, MemoryEvictionMetric
from worker.domain.events import EventTemplate, event_id, invalidations, saved
from worker.domain.owner import cache_key
from worker.kinds.create.outcome import SaveOutcome
from worker.kinds.create.record import SavePlan, SaveSettled
from worker.kinds.create.rendering import save_notice


def create_events(command_id: str, workspace_id: str, plan: SavePlan, settled: SaveSettled, occurred_at: str
                  ) -> list[EventTemplate]:
    """The events of a model save, in publish order: invalidations first, then memory.saved,
    and after an eviction memory.evicted and the eviction metric; none for a save that ended
    writing nothing. Built from what the inbox row stores: the plan, what the save learned
    under the lock, and `occurred_at`, when its transaction ran."""
    if settled.outcome not in (SaveOutcome.SAVED, SaveOutcome.SAVED_WITH_EVICTION):
        return []
    if settled.memory_id is None:
        raise ValueError(f"the save of {command_id!r} was stored without its memory id")
    scope, owner = plan.scope, plan.owner_id
    forgot = settled.evicted_id
    out = invalidations(command_id, [cache_key(scope, owner)], occurred_at, "memory_saved")
    out.append(saved(command_id, occurred_at, scope=scope, workspace_id=workspace_id, owner_id=owner,
                     lineage_id=plan.lineage_id, memory_id=settled.memory_id, content=plan.content,
                     source="model", manually_written=False, notice=save_notice(plan, settled),
                     evicted=None if forgot is None else EvictedMemory(forgot, settled.forgotten or "")))
    if forgot is None:
        return out
    if plan.metric_event_id is None:
        raise ValueError(f"the eviction of {command_id!r} was planned without its metric id")
    eid = event_id(command_id, "evicted")
    out.append(EventTemplate(
        subject=subjects.evicted_subject(scope, owner),
        headers={"Nats-Msg-Id": eid},
        payload=MemoryEvicted(event_id=eid, command_id=command_id, occurred_at=occurred_at, scope=scope,
                              owner_id=owner, lineage_id=plan.lineage_id, memory_id=forgot,
                              content_forgotten=settled.forgotten or "", replaced_by=settled.memory_id,
                              decay_days=plan.decay_days),
    ))
    out.append(EventTemplate(
        subject=subjects.METRIC_EVICTION_SUBJECT,
        headers={"Nats-Msg-Id": plan.metric_event_id},
        payload=MemoryEvictionMetric(scope=scope, decay_days=plan.decay_days),
    ))
    return out
