"""Events the worker publishes through the outbox (DESIGN.md section 3.5)."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

Scope = Literal["server", "personal"]
Source = Literal["model", "manual", "import", "legacy", "bio_seed"]


class EvictedMemory(Struct, frozen=True):
    memory_id: int
    content: str


class MemorySaved(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: str
    scope: Scope
    workspace_id: str
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str
    source: Source
    manually_written: bool
    evicted: EvictedMemory | None = None
    notice: dict[str, Any] | None = None


class MemoryRemoved(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: str
    scope: Scope
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str


class MemoryEvicted(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: str
    scope: Scope
    owner_id: str
    lineage_id: int
    memory_id: int
    content_forgotten: str
    replaced_by: int
    decay_days: int


class CacheInvalidate(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: str
    cache: Literal["tomori_state", "user"]
    key: str
    reason: str


class MemoryEvictionMetric(Struct, kw_only=True):
    """Exactly these two fields: no content, no ids (the event id rides in Nats-Msg-Id)."""

    scope: Scope
    decay_days: int
