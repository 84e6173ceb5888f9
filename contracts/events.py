"""Events the worker publishes through the outbox (docs/design.md, section 3.5)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from .notice import NoticeField

Scope = Literal["server", "personal"]
Source = Literal["model", "manual", "import", "legacy", "bio_seed"]
OccurredAt = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]


class EvictedMemory(Struct, frozen=True):
    memory_id: int
    content: str


class MemorySaved(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    workspace_id: str
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str
    source: Source
    manually_written: bool
    evicted: EvictedMemory | None = None
    notice: NoticeField = None


class MemoryRemoved(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str


class MemoryEvicted(Struct, kw_only=True):
    event_id: str
    command_id: str
    occurred_at: OccurredAt
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
    occurred_at: OccurredAt
    cache: Literal["tomori_state", "user"]
    key: str
    reason: str


class MemoryEvictionMetric(Struct, kw_only=True, forbid_unknown_fields=True):
    """Exactly these two fields: no content, no ids. The event id rides in the Nats-Msg-Id
    header and is opaque: it leads back to no command, workspace or content."""

    scope: Scope
    decay_days: Annotated[int, Meta(ge=1)]
