"""What a memory.manual decision reads under the owner lock: the owner's rows as the panels see them."""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.domain.memory import MemoryEntry
from worker.domain.people import Privacy, ProxyIdentity
from worker.domain.workspace import Workspace


@dataclass(frozen=True, slots=True)
class PanelMemory:
    """A memory row as the panels see it."""

    memory_id: int
    lineage_id: int
    content: str
    tags: tuple[str, ...] = ()
    manually_written: bool = False
    taught_by: str | None = None  # Discord id of the teacher (server rows); None if unknown


@dataclass(frozen=True, slots=True)
class ManualContext:
    """What a memory.manual decision needs, read inside the owner's locked transaction."""

    workspace: Workspace = field(default_factory=Workspace)
    actor_privacy_level: int = Privacy.OPEN  # 0 when the actor has no users row
    actor_blacklisted: bool = False  # actor in this workspace's personalization_blacklist
    identity: ProxyIdentity | None = None  # set when identity_id names a known identity
    identity_hosted_by_actor: bool = False
    count: int = 0  # the owner's rows as the cap counts them (personal: lineage + lineage 0)
    target: PanelMemory | None = None  # edit/remove: memory_id within this owner and exact lineage
    existing_contents: tuple[str, ...] = ()  # add_batch: contents at this owner and lineage
    lineage_rows: tuple[MemoryEntry, ...] = ()  # import: every row of this owner and exact lineage
