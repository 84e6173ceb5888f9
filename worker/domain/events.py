"""The events a command emits (docs/design.md, section 3.5).

The event shapes live here, next to the contracts, not in SQL. Event ids derive from the
command id: a command retried after a crash emits the same ids, and JetStream's
de-duplication and any consumer can recognise the repeat. The eviction metric is the
exception: its id is random (docs/design.md, section 3.5), so a metric sample leads back to no command,
workspace or content. It is still retry-safe: it is chosen once, before the save, and stored
with the command's inbox row (in the `SavePlan`), and every publish of that event carries it.

A create's events are built after its save, from what its inbox row stores: its decision
and what the save learned under the lock. So a redelivery that publishes them again
(worker/services/stored.py) builds the very same events from the same row.
"""

from __future__ import annotations

import uuid

import msgspec

from contracts import subjects
from contracts.events import (
    CacheInvalidate,
    EvictedMemory,
    MemoryEvicted,
    MemoryEvictionMetric,
    MemoryRemoved,
    MemorySaved,
    MemoryUpdated,
    Source,
)
from contracts.notice import NoticePlan
from contracts.result_parts import CacheKey

from .create_decision import SaveFacts, SavePlan
from .create_result import save_notice
from .model import SaveOutcome, Scope
from .owner import cache_key
from .update_decision import UpdateFacts, UpdateOutcome, UpdatePlan
from .update_notice import update_notice


class EventTemplate(msgspec.Struct, frozen=True):
    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw | object


def event_id(command_id: str, suffix: str) -> str:
    return f"{command_id}:{suffix}"


def opaque_event_id() -> str:
    return f"metric:{uuid.uuid4().hex}"


def invalidations(command_id: str, keys: tuple[CacheKey, ...] | list[CacheKey], occurred_at: str,
                  reason: str) -> list[EventTemplate]:
    out = []
    for key in keys:
        eid = event_id(command_id, f"invalidate:{key.cache}:{key.key}")
        out.append(EventTemplate(
            subject=subjects.invalidate_subject(key.cache, key.key),
            headers={"Nats-Msg-Id": eid},
            payload=CacheInvalidate(event_id=eid, command_id=command_id, occurred_at=occurred_at,
                                    cache=key.cache, key=key.key, reason=reason),
        ))
    return out


def saved(command_id: str, occurred_at: str, *, scope: Scope, workspace_id: str, owner_id: str, lineage_id: int,
          memory_id: int, content: str, source: Source, manually_written: bool,
          evicted: EvictedMemory | None = None, notice: NoticePlan | dict[str, object] | None = None,
          suffix: str = "saved") -> EventTemplate:
    eid = event_id(command_id, suffix)
    return EventTemplate(
        subject=subjects.saved_subject(scope, owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemorySaved(event_id=eid, command_id=command_id, occurred_at=occurred_at, scope=scope,
                            workspace_id=workspace_id, owner_id=owner_id, lineage_id=lineage_id,
                            memory_id=memory_id, content=content, source=source,
                            manually_written=manually_written, evicted=evicted,
                            notice=None if notice is None else dict(notice)),
    )


def removed(command_id: str, occurred_at: str, *, scope: Scope, owner_id: str, lineage_id: int, memory_id: int,
            content: str) -> EventTemplate:
    eid = event_id(command_id, f"removed:{memory_id}")
    return EventTemplate(
        subject=subjects.removed_subject(scope, owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemoryRemoved(event_id=eid, command_id=command_id, occurred_at=occurred_at, scope=scope,
                              owner_id=owner_id, lineage_id=lineage_id, memory_id=memory_id, content=content),
    )


def updated(command_id: str, occurred_at: str, *, scope: Scope, workspace_id: str, owner_id: str, lineage_id: int,
            memory_id: int, content: str, content_before: str, source: Source, manually_written: bool,
            notice: NoticePlan) -> EventTemplate:
    eid = event_id(command_id, f"updated:{memory_id}")
    return EventTemplate(
        subject=subjects.updated_subject(scope, owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemoryUpdated(event_id=eid, command_id=command_id, occurred_at=occurred_at, scope=scope,
                              workspace_id=workspace_id, owner_id=owner_id, lineage_id=lineage_id, memory_id=memory_id,
                              content=content, content_before=content_before, source=source,
                              manually_written=manually_written, notice=dict(notice)),
    )


def update_events(command_id: str, workspace_id: str, plan: UpdatePlan, facts: UpdateFacts, occurred_at: str
                  ) -> list[EventTemplate]:
    """The events of a memory.update, in publish order: the invalidation first, then
    memory.updated for an edit or memory.removed for a delete; none for one that changed
    nothing. Built from what the inbox row stores, as a create's are."""
    if facts.outcome not in (UpdateOutcome.UPDATED, UpdateOutcome.DELETED):
        return []
    if facts.content_before is None or facts.lineage_id is None or facts.source is None:
        raise ValueError(f"the update of {command_id!r} was stored without the row it changed")
    deleted = facts.outcome == UpdateOutcome.DELETED
    scope, owner = plan.scope, plan.owner_id
    out = invalidations(command_id, [cache_key(scope, owner)], occurred_at,
                        "memory_deleted" if deleted else "memory_updated")
    if deleted:
        out.append(removed(command_id, occurred_at, scope=scope, owner_id=owner, lineage_id=facts.lineage_id,
                           memory_id=plan.memory_id, content=facts.content_before))
    elif plan.content is not None:
        out.append(updated(command_id, occurred_at, scope=scope, workspace_id=workspace_id, owner_id=owner,
                           lineage_id=facts.lineage_id, memory_id=plan.memory_id, content=plan.content,
                           content_before=facts.content_before, source=facts.source,
                           manually_written=bool(facts.manually_written), notice=update_notice(plan, facts)))
    return out


def create_events(command_id: str, workspace_id: str, plan: SavePlan, facts: SaveFacts, occurred_at: str
                  ) -> list[EventTemplate]:
    """The events of a model save, in publish order: invalidations first, then memory.saved,
    and after an eviction memory.evicted and the eviction metric; none for a save that ended
    writing nothing. Built from what the inbox row stores: the plan, what the save learned
    under the lock, and `occurred_at`, when its transaction ran."""
    if facts.outcome not in (SaveOutcome.SAVED, SaveOutcome.SAVED_WITH_EVICTION):
        return []
    if facts.memory_id is None:
        raise ValueError(f"the save of {command_id!r} was stored without its memory id")
    scope, owner = plan.scope, plan.owner_id
    forgot = facts.evicted_id
    out = invalidations(command_id, [cache_key(scope, owner)], occurred_at, "memory_saved")
    out.append(saved(command_id, occurred_at, scope=scope, workspace_id=workspace_id, owner_id=owner,
                     lineage_id=plan.lineage_id, memory_id=facts.memory_id, content=plan.content,
                     source="model", manually_written=False, notice=save_notice(plan, facts),
                     evicted=None if forgot is None else EvictedMemory(forgot, facts.forgotten or "")))
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
                              content_forgotten=facts.forgotten or "", replaced_by=facts.memory_id,
                              decay_days=plan.decay_days),
    ))
    out.append(EventTemplate(
        subject=subjects.METRIC_EVICTION_SUBJECT,
        headers={"Nats-Msg-Id": plan.metric_event_id},
        payload=MemoryEvictionMetric(scope=scope, decay_days=plan.decay_days),
    ))
    return out
