"""The events a command emits (docs/design.md, section 3.5).

The event shapes live here, next to the contracts, not in SQL. Event ids derive from the
command id: a command retried after a crash emits the same ids, and JetStream's
de-duplication and any consumer can recognise the repeat. The eviction metric is the
exception: its id is random (docs/design.md, section 3.5), so a metric sample leads back to no command,
workspace or content. It is still retry-safe: it is chosen once, before the save, and stored
with the command's inbox row (`SavedFacts`), and every publish of that event carries it.

A create's events are built after its save, from what the save stored: its result, the
command, and `SavedFacts` (what only the save knew). So a redelivery that publishes them
again (worker/services/base.py) builds the very same events from the same row.
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
from contracts.results import CacheKey, CommandResult

from .model import SCOPE_OF, Scope


class EventTemplate(msgspec.Struct, frozen=True):
    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw | object


class SavedFacts(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a model save's events say that its stored result and its command do not, kept
    with its inbox row (processed_commands.event_facts, NULL when there is nothing: a plain
    save of a server's memory): whose memory a person's memory is (a server's is its
    workspace's), and after an eviction the forgotten row's id (set by the database), the
    decay days and the eviction metric's event id (chosen before the save: `EvictionFacts`)."""

    owner_id: str | None = None
    evicted_id: int | None = None
    decay_days: int | None = None
    metric_event_id: str | None = None


class EvictionFacts(msgspec.Struct, frozen=True):
    """The part of `SavedFacts` a save stores only when it forgets a row."""

    decay_days: int
    metric_event_id: str


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


def create_events(cmd: CreateMemory, result: CommandResult, facts: SavedFacts | None, occurred_at: str
                  ) -> list[EventTemplate]:
    """The events of a model save that wrote, in publish order: invalidations first, then
    memory.saved, and after an eviction memory.evicted and the eviction metric. `result` is
    the result as stored (its memory id, contents, scope and notice are the events');
    `occurred_at` when the save's transaction ran."""
    cid = cmd.command_id
    data = result.data
    scope = SCOPE_OF.get(data.scope or "")
    if data.memory_id is None or data.content_saved is None or scope is None:
        raise ValueError(f"the result of {cid!r} is not a save's: {data.status}")
    facts = facts or SavedFacts()
    owner = cmd.workspace_id if scope == "server" else facts.owner_id
    if owner is None:
        raise ValueError(f"the save of {cid!r}, a person's memory, was stored without its owner")
    forgot = facts.evicted_id
    out = invalidations(cid, result.invalidated, occurred_at, "memory_saved")
    out.append(saved(cid, occurred_at, scope=scope, workspace_id=cmd.workspace_id, owner_id=owner,
                     lineage_id=cmd.persona.lineage_id, memory_id=data.memory_id, content=data.content_saved,
                     source="model", manually_written=False, notice=result.notice,
                     evicted=None if forgot is None else EvictedMemory(forgot, data.content_forgotten or "")))
    if forgot is None:
        return out
    if facts.decay_days is None or facts.metric_event_id is None:
        raise ValueError(f"the eviction of {cid!r} was stored without its decay days and metric id")
    eid = event_id(cid, "evicted")
    out.append(EventTemplate(
        subject=subjects.evicted_subject(scope, owner),
        headers={"Nats-Msg-Id": eid},
        payload=MemoryEvicted(event_id=eid, command_id=cid, occurred_at=occurred_at, scope=scope,
                              owner_id=owner, lineage_id=cmd.persona.lineage_id, memory_id=forgot,
                              content_forgotten=data.content_forgotten or "", replaced_by=data.memory_id,
                              decay_days=facts.decay_days),
    ))
    out.append(EventTemplate(
        subject=subjects.METRIC_EVICTION_SUBJECT,
        headers={"Nats-Msg-Id": facts.metric_event_id},
        payload=MemoryEvictionMetric(scope=scope, decay_days=facts.decay_days),
    ))
    return out
