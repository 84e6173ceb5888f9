"""Database rows to the plain values the pure domain takes."""

from __future__ import annotations

from db.repository import HostRow, IdentityRow, PanelRow, WorkspaceRow
from worker.domain.model import HostLink, PanelMemory, ProxyIdentity, Workspace


def workspace(row: WorkspaceRow | None) -> Workspace:
    if row is None:
        return Workspace()
    return Workspace(
        server_id=row.server_id,
        self_teaching_enabled=row.self_teaching_enabled,
        personal_memories_enabled=row.personal_memories_enabled,
        memory_decay_enabled=row.memory_decay_enabled,
        memory_decay_days=row.memory_decay_days,
    )


def hosts(rows: list[HostRow]) -> tuple[HostLink, ...]:
    return tuple(HostLink(h.disc_id, h.privacy_level, h.blacklisted) for h in rows)


def identity(row: IdentityRow | None) -> ProxyIdentity | None:
    return None if row is None else ProxyIdentity(row.user_id, row.disc_id, hosts(row.hosts), row.privacy_level)


def panel_memory(row: PanelRow | None) -> PanelMemory | None:
    if row is None:
        return None
    return PanelMemory(row.memory_id, row.lineage_id, row.content, tuple(row.tags), row.manually_written,
                       row.taught_by)
