"""Database rows to the plain values the pure domain takes."""

from __future__ import annotations

from db.repository import HostRow, IdentityRow, PanelRow, WorkspaceRow
from worker.domain.model import HostLink, PanelMemory, ProxyIdentity, Workspace
from worker.domain.notice import NoticeSettings, Verbosity


def workspace(row: WorkspaceRow | None) -> Workspace:
    if row is None:
        return Workspace()
    return Workspace(
        server_id=row.server_id,
        self_teaching_enabled=row.self_teaching_enabled,
        personal_memories_enabled=row.personal_memories_enabled,
        secret_guard_enabled=row.secret_guard_enabled,
        member_teaching_enabled=row.member_teaching_enabled,
        memory_decay_enabled=row.memory_decay_enabled,
        memory_decay_days=row.memory_decay_days,
    )


def notice_settings(row: WorkspaceRow | None) -> NoticeSettings:
    if row is None:
        return NoticeSettings()
    # The schema allows only these two; a bot's value the contract does not know reads as the default.
    verbosity: Verbosity = "verbose" if row.tool_notice_verbosity == "verbose" else "minimal"
    return NoticeSettings(verbosity=verbosity, hidden_keys=tuple(row.tool_notice_hidden_keys),
                          thought_log_channel_id=row.thought_log_channel_id,
                          private_channel_ids=tuple(row.private_channel_ids))


def hosts(rows: list[HostRow]) -> tuple[HostLink, ...]:
    return tuple(HostLink(h.disc_id, h.privacy_level, h.blacklisted) for h in rows)


def identity(row: IdentityRow | None) -> ProxyIdentity | None:
    return None if row is None else ProxyIdentity(row.user_id, row.disc_id, hosts(row.hosts), row.privacy_level)


def panel_memory(row: PanelRow | None) -> PanelMemory | None:
    if row is None:
        return None
    return PanelMemory(row.memory_id, row.lineage_id, row.content, tuple(row.tags), row.manually_written,
                       row.taught_by)
