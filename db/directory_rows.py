"""The directory facts a command's context carries, as the worker's SQL readers return them
(a workspace's settings, a user with their naming, a proxy identity and its hosts)."""

from __future__ import annotations

import msgspec


class WorkspaceRow(msgspec.Struct, frozen=True):
    server_id: int
    self_teaching_enabled: bool
    personal_memories_enabled: bool
    memory_decay_enabled: bool
    memory_decay_days: int
    member_teaching_enabled: bool = True  # read by the panel context only
    secret_guard_enabled: bool | None = None  # read by the create context only; None: the operator's default
    # Notice settings: read by the create context only.
    tool_notice_verbosity: str = "minimal"
    tool_notice_hidden_keys: list[str] = []
    thought_log_channel_id: str | None = None
    private_channel_ids: list[str] = []


class HostRow(msgspec.Struct, frozen=True):
    disc_id: str
    privacy_level: int
    blacklisted: bool


class UserRow(msgspec.Struct, frozen=True):
    user_id: int
    disc_id: str
    nickname: str | None
    privacy_level: int
    persona_nickname: str | None
    proxy_hosts: list[HostRow] | None = None  # set for proxy identities
    # Naming (directory_user_naming, directory_persona_naming for the command's lineage).
    prefix_override: str | None = None
    suffix_override: str | None = None
    addressing_style: str | None = None
    persona_naming: bool = False  # a naming row for the lineage exists (its fields may all be null)
    persona_prefix: str | None = None
    persona_suffix: str | None = None
    blacklisted: bool = False  # in the command's workspace


class IdentityRow(msgspec.Struct, frozen=True):
    user_id: int
    disc_id: str
    hosts: list[HostRow]
    privacy_level: int = 0
