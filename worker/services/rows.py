"""Database rows to the plain values the pure domain takes."""

from __future__ import annotations

from typing import get_args

from db.context_rows import PanelRow
from db.directory_rows import HostRow, IdentityRow, UserRow, WorkspaceRow
from worker.domain.notice import NoticeSettings, Verbosity
from worker.domain.people import AddressingStyle, HostLink, KnownUser, PersonaNamingPreference, ProxyIdentity
from worker.domain.workspace import Workspace
from worker.kinds.manual.context import PanelMemory


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


_STYLES: tuple[AddressingStyle, ...] = get_args(AddressingStyle)


def known_user(row: UserRow) -> KnownUser:
    # The bot's CHECK allows only these styles; anything else reads as unset, as TomoriBot parses it.
    style = next((s for s in _STYLES if s == row.addressing_style), None)
    preference = (PersonaNamingPreference(row.persona_nickname, row.persona_prefix, row.persona_suffix)
                  if row.persona_naming else None)
    return KnownUser(row.user_id, row.disc_id, row.nickname, row.privacy_level, prefix_override=row.prefix_override,
                     suffix_override=row.suffix_override, addressing_style=style, persona_naming=preference,
                     blacklisted=row.blacklisted)
