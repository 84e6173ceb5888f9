"""What each context reader returns: memory_create_contexts(), memory_manual_context(),
memory_seed_context() and memory_update_target(), decoded."""

from __future__ import annotations

import msgspec

from contracts.events import Source
from db.directory_rows import HostRow, IdentityRow, UserRow, WorkspaceRow
from db.inbox import RawInboxRow, StoredInboxRow


class PanelRow(msgspec.Struct, frozen=True):
    memory_id: int
    lineage_id: int
    content: str
    tags: list[str]
    manually_written: bool
    taught_by: str | None
    source: Source


class LineageRow(msgspec.Struct, frozen=True):
    """A row of the owner and exact lineage an import compares with and a replace deletes."""

    memory_id: int
    content: str
    tags: list[str]


class ManualContextRow(msgspec.Struct, frozen=True):
    workspace: WorkspaceRow | None
    actor_privacy_level: int
    actor_blacklisted: bool
    identity: IdentityRow | None
    identity_hosted_by_actor: bool
    owner_user_id: int | None
    count: int
    target: PanelRow | None
    existing: list[str]
    lineage_rows: list[LineageRow] = []


class SeedContextRow(msgspec.Struct, frozen=True):
    identity: IdentityRow | None
    already_seeded: bool
    lineage0_count: int


class CreateContextRow(msgspec.Struct, frozen=True):
    stored: StoredInboxRow | None  # the command, if it was seen before
    workspace: WorkspaceRow | None
    users: list[UserRow]


class _ContextRow(msgspec.Struct, frozen=True):
    """memory_create_context() as it comes (its stored command decoded by kind afterwards)."""

    stored: RawInboxRow | None
    workspace: WorkspaceRow | None
    users: list[UserRow]

    def decoded(self) -> CreateContextRow:
        return CreateContextRow(None if self.stored is None else self.stored.decoded(), self.workspace, self.users)


class LockedMemoryRow(msgspec.Struct, frozen=True):
    lineage_id: int
    content: str
    source: Source
    manually_written: bool


class UpdateTargetRow(msgspec.Struct, frozen=True):
    """memory_update_target(): the memory (null: not within the owner and lineage) and, for a
    personal memory, the user's privacy level (null: no users row), blacklisting and a proxy
    identity's hosts."""

    memory: LockedMemoryRow | None
    privacy_level: int | None = None
    blacklisted: bool = False
    hosts: list[HostRow] | None = None


_CONTEXTS = msgspec.json.Decoder(list[_ContextRow])


def decode_create_contexts(raw: str | bytes) -> list[CreateContextRow]:
    """A memory_create_contexts() value: one context per command, each stored command decoded by its kind."""
    return [row.decoded() for row in _CONTEXTS.decode(raw)]
