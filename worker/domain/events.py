"""The events a command emits, built before they are stored with its inbox row (docs/design.md, section 3.5).

For a create the database fills in only what it alone knows (the new memory id, the evicted
row), so the event shapes live here, next to the contracts, not in SQL. Event ids derive
from the command id: a command retried after a crash emits the same ids, and JetStream's
de-duplication and any consumer can recognise the repeat. The eviction metric is the
exception: its id is random (docs/design.md, section 3.5), so a metric sample leads back to no command,
workspace or content. It is still retry-safe: it is chosen once, in the transaction that
stores the command's inbox row with its events, and every publish of that event carries it.
"""

from __future__ import annotations

import uuid

import msgspec

from contracts import subjects
from contracts.commands import CreateMemory
from contracts.events import (
    CacheInvalidate,
    EvictedMemory,
    MemoryEvicted,
    MemoryEvictionMetric,
    MemoryRemoved,
    MemorySaved,
    Source,
)
from contracts.notice import NoticePlan
from contracts.results import CacheKey

from .model import SavePlan, Scope


class EventTemplate(msgspec.Struct, frozen=True):
    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw | object
    fill: str | None = None  # "saved" | "evicted": which ids the database fills in
    only_on_evict: bool = False


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
          evicted: EvictedMemory | None = None, notice: NoticePlan | None = None, suffix: str = "saved",
          fill: str | None = None) -> EventTemplate:
    eid = event_id(command_id, suffix)
    return EventTemplate(
        subject=subjects.saved_subject(scope, owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemorySaved(event_id=eid, command_id=command_id, occurred_at=occurred_at, scope=scope,
                            workspace_id=workspace_id, owner_id=owner_id, lineage_id=lineage_id,
                            memory_id=memory_id, content=content, source=source,
                            manually_written=manually_written, evicted=evicted,
                            notice=None if notice is None else dict(notice)),
        fill=fill,
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


def save_events(cmd: CreateMemory, plan: SavePlan, occurred_at: str, *, notice: NoticePlan | None = None
                ) -> list[EventTemplate]:
    """The events of a model save, in publish order: invalidations first, then what was saved."""
    cid = cmd.command_id
    out = invalidations(cid, plan.invalidate, occurred_at, "memory_saved")
    out.append(saved(cid, occurred_at, scope=plan.scope, workspace_id=cmd.workspace_id, owner_id=plan.owner_id,
                     lineage_id=plan.lineage_id, memory_id=0, content=plan.content, source="model",
                     manually_written=False, notice=notice, fill="saved"))
    eid = event_id(cid, "evicted")
    out.append(EventTemplate(
        subject=subjects.evicted_subject(plan.scope, plan.owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemoryEvicted(event_id=eid, command_id=cid, occurred_at=occurred_at, scope=plan.scope,
                              owner_id=plan.owner_id, lineage_id=plan.lineage_id, memory_id=0,
                              content_forgotten="", replaced_by=0, decay_days=plan.decay_days),
        fill="evicted", only_on_evict=True,
    ))
    out.append(EventTemplate(
        subject=subjects.METRIC_EVICTION_SUBJECT,
        headers={"Nats-Msg-Id": opaque_event_id()},
        payload=MemoryEvictionMetric(scope=plan.scope, decay_days=plan.decay_days),
        only_on_evict=True,
    ))
    return out
