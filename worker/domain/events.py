"""The events a save may emit, built before the transaction (DESIGN.md section 3.5).

The database fills in only what it alone knows (the new memory id, the evicted row), so
the event shapes live here, next to the contracts, not in SQL. Event ids derive from the
command id: a command retried after a crash emits the same ids, and JetStream's
de-duplication and any consumer can recognise the repeat.
"""

from __future__ import annotations

import msgspec

from contracts import subjects
from contracts.commands import CreateMemory
from contracts.events import CacheInvalidate, MemoryEvicted, MemoryEvictionMetric, MemorySaved

from .model import SavePlan


class EventTemplate(msgspec.Struct, frozen=True):
    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw | object
    fill: str | None = None  # "saved" | "evicted": which ids the database fills in
    only_on_evict: bool = False


def event_id(command_id: str, suffix: str) -> str:
    return f"{command_id}:{suffix}"


def save_events(cmd: CreateMemory, plan: SavePlan, occurred_at: str, *, source: str = "model",
                manually_written: bool = False, notice: dict | None = None) -> list[EventTemplate]:
    """Outbox rows of a save, in publish order: invalidations first, then what was saved."""
    cid = cmd.command_id
    out: list[EventTemplate] = []
    for key in plan.invalidate:
        eid = event_id(cid, f"invalidate:{key.cache}:{key.key}")
        out.append(EventTemplate(
            subject=subjects.invalidate_subject(key.cache, key.key),
            headers={"Nats-Msg-Id": eid},
            payload=CacheInvalidate(event_id=eid, command_id=cid, occurred_at=occurred_at, cache=key.cache,
                                    key=key.key, reason="memory_saved"),
        ))
    eid = event_id(cid, "saved")
    out.append(EventTemplate(
        subject=subjects.saved_subject(plan.scope, plan.owner_id),
        headers={"Nats-Msg-Id": eid},
        payload=MemorySaved(event_id=eid, command_id=cid, occurred_at=occurred_at, scope=plan.scope,
                            workspace_id=cmd.workspace_id, owner_id=plan.owner_id, lineage_id=plan.lineage_id,
                            memory_id=0, content=plan.content, source=source,
                            manually_written=manually_written, evicted=None, notice=notice),
        fill="saved",
    ))
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
        headers={"Nats-Msg-Id": event_id(cid, "metric:eviction")},
        payload=MemoryEvictionMetric(scope=plan.scope, decay_days=plan.decay_days),
        only_on_evict=True,
    ))
    return out
