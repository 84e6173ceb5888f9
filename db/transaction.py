"""An owner-locked transaction's reads (Tx) and the one order its owner locks are taken in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import asyncpg
import msgspec

from contracts.codec import encode
from db.context_rows import ManualContextRow, SeedContextRow, UpdateTargetRow
from db.inbox import StoredInboxRow, decode_inbox_row
from db.requests import ManualContextRequest, UpdateTargetRequest
from db.shadow_pairs import ShadowPairs

_UPDATE_TARGET = msgspec.json.Decoder(UpdateTargetRow)
_MANUAL_CONTEXT = msgspec.json.Decoder(ManualContextRow)
_SEED_CONTEXT = msgspec.json.Decoder(SeedContextRow)


def lock_order(owners: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The one order in which a transaction takes several owner locks ((scope, Discord id)
    pairs): two transactions locking overlapping owners then never deadlock."""
    return sorted(set(owners))


class Tx:
    """The reads inside one owner-locked transaction (see MemoryRepository.owner_transaction).
    Writes are the applier's (db/applier.py), which carries out a command's effects, or, in a
    read-only transaction (a dry run), foretells them."""

    def __init__(self, conn: asyncpg.Connection, tenant: str = "", *, read_only: bool = False) -> None:
        self.conn = conn
        self.tenant = tenant  # the repository's: what seen_before() compares a stored row's with
        self.read_only = read_only  # the transaction is READ ONLY: a dry run's

    @property
    def shadow_pairs(self) -> ShadowPairs:
        return ShadowPairs(self.conn, self.tenant)

    async def stored(self, command_id: str) -> StoredInboxRow | None:
        """The command as stored, if it was seen before."""
        raw = await self.conn.fetchval(
            "SELECT memory_stored_command(pc) FROM processed_commands pc WHERE pc.command_id = $1", command_id)
        return None if raw is None else decode_inbox_row(raw)

    async def manual_context(self, request: ManualContextRequest) -> ManualContextRow:
        raw = await self.conn.fetchval("SELECT memory_manual_context($1::jsonb)", encode(request).decode())
        return _MANUAL_CONTEXT.decode(raw)

    async def seed_context(self, identity: str, workspace_id: str) -> SeedContextRow:
        raw = await self.conn.fetchval("SELECT memory_seed_context($1, $2)", identity, workspace_id)
        return _SEED_CONTEXT.decode(raw)

    async def update_target(self, request: UpdateTargetRequest) -> UpdateTargetRow:
        raw = await self.conn.fetchval("SELECT memory_update_target($1::jsonb)", encode(request).decode())
        return _UPDATE_TARGET.decode(raw)

    async def personal_owners(self, memory_ids: Sequence[int], lineage_id: int) -> list[str]:
        """The Discord ids owning these personal memories (of the lineage or lineage 0)."""
        rows = await self.conn.fetch(
            "SELECT DISTINCT u.user_disc_id FROM personal_memories m JOIN users u ON u.user_id = m.user_id"
            " WHERE m.personal_memory_id = ANY($1::bigint[]) AND m.persona_lineage_id IN ($2, 0)",
            list(memory_ids), lineage_id)
        return [r[0] for r in rows]

    async def lock_owners(self, owners: Iterable[tuple[str, str]]) -> None:
        for scope, owner_id in lock_order(owners):
            await self.conn.execute("SELECT memory_lock_owner($1, $2)", scope, owner_id)
