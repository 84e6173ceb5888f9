"""Shadow mode's record: each shadowed command's dry run beside the bot's own outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg
import msgspec

from db.pool import PooledCalls


class ShadowPairRow(msgspec.Struct, frozen=True):
    """A shadowed command's dry run, as memory_worker.shadow_pairs keeps it, with whose it is."""

    tenant: str
    workspace_id: str
    kind: str
    dry_status: str | None
    dry_result: dict[str, Any] | None
    intended: str | None = None
    owner: tuple[str, str] | None = None  # whose memories it would have created: (scope, Discord id)


class ShadowPairs:
    """memory_worker.shadow_pairs (db/migrations/012_shadow_pairs.sql, 013_shadow_outcomes.sql):
    a dry run's answer, then the bot's own outcome beside it. Only the repository's tenant's
    rows are written."""

    def __init__(self, conn: asyncpg.Connection | PooledCalls, tenant: str) -> None:
        self._conn = conn
        self._tenant = tenant

    async def record_dry_run(self, command_id: str, kind: str, workspace_id: str, status: str,
                             result_json: bytes, intended: str | None = None,
                             owner: tuple[str, str] | None = None) -> None:
        """The dry run's answer: the one row a dry run writes (a redelivery's is dropped).
        `intended`: why a difference here would be on purpose (secret_guard), or None;
        `owner`: the lock key of the owner whose memories it would have created, or None."""
        scope, owner_id = owner if owner is not None else (None, None)
        await self._conn.execute(
            "INSERT INTO shadow_pairs (command_id, tenant, kind, workspace_id, dry_status, dry_result, dry_at, intended,"
            " owner_scope, owner_id) VALUES ($1, $2, $3, $4, $5, $6::jsonb, now(), $7, $8, $9)"
            " ON CONFLICT (command_id) DO NOTHING",
            command_id, self._tenant, kind, workspace_id, status, result_json.decode(), intended, scope, owner_id)

    async def pair_of(self, command_id: str, *, lock: bool = True) -> ShadowPairRow | None:
        """The pair under this command id, whichever workspace and bot it is of (the caller
        refuses another's), locked until the report is stored (`lock` false: read only, for a
        report's own dry run; a row lock is a write)."""
        row = await self._conn.fetchrow(
            "SELECT tenant, workspace_id, kind, dry_status, dry_result::text, intended, owner_scope, owner_id"
            " FROM shadow_pairs WHERE command_id = $1" + (" FOR UPDATE" if lock else ""), command_id)
        if row is None:
            return None
        return ShadowPairRow(row[0], row[1], row[2], row[3], None if row[4] is None else msgspec.json.decode(row[4]),
                             row[5], None if row[6] is None else (row[6], row[7]))

    async def inserted_between(self, owner: tuple[str, str], first: int, last: int, skip: Sequence[int]) -> bool:
        """Does the owner's table hold a row of this owner with an id from `first` to `last`,
        other than `skip`'s? (An insert between a dry run, which foresaw `first`, and the bot's
        own write, which got `skip`.)"""
        scope, owner_id = owner
        table, key = _TABLES[scope]
        owners, owner_key, disc_id = (("servers", "server_id", "server_disc_id") if scope == "server"
                                      else ("users", "user_id", "user_disc_id"))
        found: bool = await self._conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM {table} m JOIN {owners} o ON o.{owner_key} = m.{owner_key}"
            f" WHERE o.{disc_id} = $1 AND m.{key} BETWEEN $2 AND $3 AND m.{key} <> ALL($4::bigint[]))",
            owner_id, first, last, list(skip))
        return found

    async def record_report(self, command_id: str, kind: str, workspace_id: str, *, bot_status: str | None,
                            bot_result: bytes | None, bot_error: str | None, outcome: str,
                            differences: bytes) -> bool:
        """The bot's outcome beside its dry run (a repeat of the report overwrites it with the
        same); a report of no dry run gets a row of its own. Whether it was stored: another
        tenant's or workspace's row under the same id is left alone."""
        status = await self._conn.execute(
            "INSERT INTO shadow_pairs AS p (command_id, tenant, kind, workspace_id, bot_status, bot_result, bot_error,"
            " outcome, differences, reported_at)"
            " VALUES ($1, $9, $2, $3, $4, $5::jsonb, $6, $7, $8::jsonb, now())"
            " ON CONFLICT (command_id) DO UPDATE SET bot_status = excluded.bot_status,"
            " bot_result = excluded.bot_result, bot_error = excluded.bot_error, outcome = excluded.outcome,"
            " differences = excluded.differences, reported_at = excluded.reported_at"
            " WHERE p.tenant = excluded.tenant AND p.workspace_id = excluded.workspace_id",
            command_id, kind, workspace_id, bot_status, None if bot_result is None else bot_result.decode(),
            bot_error, outcome, differences.decode(), self._tenant)
        return bool(status.endswith(" 1"))


_TABLES = {"server": ("server_memories", "server_memory_id"), "personal": ("personal_memories", "personal_memory_id")}
