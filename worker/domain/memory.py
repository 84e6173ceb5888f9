"""A memory as the rules outside one kind see it: a stored row's age, or a text with its tags."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A memory row as the eviction rule sees it."""

    memory_id: int
    lineage_id: int
    manually_written: bool
    created_at: datetime
    last_reinforced_at: datetime | None
    content: str = ""


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """A memory's text and tags: an import's entry, or a stored row it is compared with."""

    content: str
    tags: tuple[str, ...] = ()
