"""What decide_manual decides: a refusal, or the one write the command makes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.kinds.manual import ManualStatus
from worker.domain.memory import MemoryEntry


@dataclass(frozen=True, slots=True)
class Refuse:
    status: ManualStatus
    reason: str
    extra: Mapping[str, int] = field(default_factory=dict)  # available/requested for batches


@dataclass(frozen=True, slots=True)
class Insert:
    contents: tuple[str, ...]
    tags: tuple[str, ...]
    skipped_duplicates: int = 0


@dataclass(frozen=True, slots=True)
class Update:
    memory_id: int
    content: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unchanged:
    memory_id: int


@dataclass(frozen=True, slots=True)
class Delete:
    memory_id: int
    content: str


@dataclass(frozen=True, slots=True)
class Import:
    """An import's write: with `replace`, first delete every row of the owner and exact lineage."""

    entries: tuple[MemoryEntry, ...]
    replace: bool
    skipped_duplicates: int = 0


ManualDecision = Refuse | Insert | Update | Unchanged | Delete | Import
