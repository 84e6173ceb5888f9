"""Explicit SQL, one statement per call. Transactions and the owner lock live in the
server-side functions of db/migrations (memory_lock_owner is the only place the lock is
taken), so every write is one round trip and one transaction."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import msgspec


class OutboxRow(msgspec.Struct, frozen=True):
    id: int
    subject: str
    headers: dict[str, str]
    payload: msgspec.Raw


class WorkspaceRow(msgspec.Struct, frozen=True):
    server_id: int
    self_teaching_enabled: bool
    personal_memories_enabled: bool
    memory_decay_enabled: bool
    memory_decay_days: int


class UserRow(msgspec.Struct, frozen=True):
    user_id: int
    disc_id: str
    nickname: str | None
    privacy_level: int
    persona_nickname: str | None


class CreateContextRow(msgspec.Struct, frozen=True):
    stored: msgspec.Raw  # JSON null when the command has no stored result (Raw | None decodes only null)
    pending: list[OutboxRow]
    workspace: WorkspaceRow | None
    users: list[UserRow]


class SaveRow(msgspec.Struct, frozen=True):
    duplicate: bool
    result: msgspec.Raw
    outbox: list[OutboxRow]


_CONTEXT = msgspec.json.Decoder(CreateContextRow)
_OUTBOX = msgspec.json.Decoder(list[OutboxRow])


async def _json_as_text(conn: asyncpg.Connection) -> None:
    # asyncpg hands jsonb over as text; keeping it text lets msgspec decode it straight into
    # Structs, and lets a stored result be replied without a decode/encode round.
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=lambda v: v, decoder=lambda v: v, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without asyncpg's default reset query (a round trip on every release).

    Pool connections never change session state: locks are transaction-scoped, nothing is
    SET, LISTENed or left open; asyncpg still rolls back a transaction left open.
    """


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 20) -> asyncpg.Pool:
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_json_as_text, reset=_keep_session,
        # The lock and statement timeouts turn a stuck database into a retryable error
        # instead of a partition that silently stops.
        server_settings={"lock_timeout": "10s", "statement_timeout": "30s",
                         "application_name": "memory-worker"},
    )


class MemoryRepository:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def create_context(self, command_id: str, workspace_id: str, ids: Sequence[str],
                             lineage_id: int) -> CreateContextRow:
        raw = await self._pool.fetchval(
            "SELECT memory_create_context($1, $2, $3, $4)", command_id, workspace_id, list(ids), lineage_id
        )
        return _CONTEXT.decode(raw)

    @staticmethod
    def stored_or_none(row: CreateContextRow) -> bytes | None:
        stored = bytes(row.stored)
        return None if stored == b"null" else stored

    async def create_save(self, plan_json: bytes) -> SaveRow:
        row = await self._pool.fetchrow("SELECT * FROM memory_create_save($1::jsonb)", plan_json.decode())
        return SaveRow(row["duplicate"], msgspec.Raw(row["result"].encode()), _OUTBOX.decode(row["outbox"]))

    async def record_result(self, command_id: str, kind: str, result_json: bytes) -> tuple[bool, bytes]:
        row = await self._pool.fetchrow(
            "SELECT * FROM memory_record_result($1, $2, $3::jsonb)", command_id, kind, result_json.decode()
        )
        return row["duplicate"], row["result"].encode()

    async def stored_result(self, command_id: str) -> bytes | None:
        raw = await self._pool.fetchval("SELECT result FROM processed_commands WHERE command_id = $1", command_id)
        return raw.encode() if raw is not None else None

    async def mark_published(self, ids: Sequence[int]) -> None:
        await self._pool.execute(
            "UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[]) AND published_at IS NULL", list(ids)
        )

    async def unpublished(self, older_than_seconds: float, limit: int) -> list[OutboxRow]:
        """Rows a crash left behind (older than the in-flight window), oldest first."""
        raw = await self._pool.fetchval(
            "SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'subject', subject,"
            " 'headers', headers, 'payload', payload) ORDER BY id), '[]'::jsonb)"
            " FROM (SELECT * FROM outbox WHERE published_at IS NULL"
            "       AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2) o",
            older_than_seconds, limit,
        )
        return _OUTBOX.decode(raw)
