"""The events a command emits (docs/design.md, section 3.5).

The event shapes live here, next to the contracts, not in SQL. Event ids derive from the
command id: a command retried after a crash emits the same ids, and JetStream's
de-duplication and any consumer can recognise the repeat. The eviction metric is the
exception: its id is random (docs/design.md, section 3.5), so a metric sample leads back to no command,
workspace or content. It is still retry-safe: it is chosen once, before the save, and stored
with the command's inbox row (in the `SavePlan`), and every publish of that event carries it.

A kind's events (worker/kinds/create/events.py, worker/kinds/update/events.py) are built from
these shapes after its write, from what its inbox row stores.
"""

from __future__ import annotations

import uuid

import msgspec

from contracts import subjects
from contracts.events import (
    CacheInvalidate,
    EvictedMemory,
    MemoryRemoved,
    MemorySaved,
    MemoryUpdated,
    Source,
)
from contracts.notice import NoticePlan
from contracts.result_parts import CacheKey

from .scope import Scope


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
