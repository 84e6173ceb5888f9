"""The directory a bot would otherwise write, for operators (memoryctl). Explicit SQL.

The rule for what the CLI may write (README, "What the CLI may write"):
- reads go through the directory functions (db/directory_functions.py), so they show what the worker sees
  in either mode;
- standalone: the directory tables are the worker's own layout, standing in for a bot, and
  every command writes them (a new id is registered, and the command says so);
- adopted: the bot's tables are the bot's. The only writes are decay and the secret guard,
  which TomoriBot has no column for, into memory_worker.workspace_settings, and only for a
  server the bot already has; everything else is refused, naming where to change it;
- a database the worker has not set up (a bot's nobody adopted, or an empty one) is refused
  by every command, as `memoryctl run` refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from db import migrate
from worker.domain.people import Privacy

# The names an operator types for users.privacy_level: open, partial, full.
PRIVACY_LEVELS = {level.name.lower(): level.value for level in Privacy}

# Settings an operator may change, with the column each maps to (in the standalone servers
# table and in directory_workspaces()).
WORKSPACE_SETTINGS = {
    "self_teaching": "self_teaching_enabled",
    "personal_memories": "personal_memories_enabled",
    "decay": "memory_decay_enabled",
    "decay_days": "memory_decay_days",
    "notice_verbosity": "tool_notice_verbosity",
    "hidden_keys": "tool_notice_hidden_keys",
    "thought_log": "thought_log_channel_id",
    "private_channels": "private_channel_ids",
    "secret_guard": "secret_guard_enabled",
}
# `--secret-guard`: on, off, or default (no choice of the workspace's own, NULL: the worker's
# SECRET_GUARD_DEFAULT decides).
GUARD_CHOICES: dict[str, bool | None] = {"on": True, "off": False, "default": None}
_GUARD_UNSET = "default (SECRET_GUARD_DEFAULT, on unless set off)"


def shown(key: str, value: object) -> object:
    """A setting as `workspace show` prints it: as read, but the guard's NULL in words."""
    return _GUARD_UNSET if key == "secret_guard" and value is None else value


# In an adopted database, the settings the worker owns (TomoriBot has no column for them).
WORKER_OWNED = ("decay", "decay_days", "secret_guard")


class BotOwned(ValueError):
    """A change to something an adopted bot keeps in its own tables."""


class NotSetUp(RuntimeError):
    """The database is not one the worker runs on (yet): nothing is read or written."""


class UnknownWorkspace(ValueError):
    """An adopted database's bot has no server of that id: the CLI never registers one there."""


async def require_mode(conn: asyncpg.Connection) -> str:
    """The database's mode; NotSetUp, naming the command, when the worker has not set it up."""
    current = await migrate.mode(conn)
    if current is not None:
        return current
    if tables := await migrate.bot_tables(conn):
        raise NotSetUp(f"this database holds a bot's tables ({', '.join(tables)}) and was not adopted:"
                       f" {migrate.ADOPT_HINT}")
    raise NotSetUp("this database is not set up for the worker yet: run `memoryctl migrate` (or `make run`)")


async def _adopted(conn: asyncpg.Connection) -> bool:
    return await migrate.mode(conn) == "adopted"


async def _refuse_if_adopted(conn: asyncpg.Connection, what: str) -> None:
    if await _adopted(conn):
        raise BotOwned(f"this database is adopted: {what} is the bot's to change (in the bot itself)")


async def _user_exists(conn: asyncpg.Connection, disc_id: str) -> bool:
    exists: bool = await conn.fetchval("SELECT EXISTS (SELECT 1 FROM users WHERE user_disc_id = $1)", disc_id)
    return exists


async def _server_exists(conn: asyncpg.Connection, disc_id: str) -> bool:
    exists: bool = await conn.fetchval("SELECT EXISTS (SELECT 1 FROM servers WHERE server_disc_id = $1)", disc_id)
    return exists


# Two statements on purpose: when a concurrent transaction inserts the same id, the insert
# waits for it and skips, and only a new statement's snapshot sees the row it committed.
async def ensure_user(conn: asyncpg.Connection, disc_id: str) -> int:
    await conn.execute("INSERT INTO users (user_disc_id) VALUES ($1) ON CONFLICT DO NOTHING", disc_id)
    user_id = await user_key(conn, disc_id)
    assert user_id is not None  # inserted above, or by the transaction the insert waited for
    return user_id


async def ensure_server(conn: asyncpg.Connection, disc_id: str) -> int:
    await conn.execute("INSERT INTO servers (server_disc_id) VALUES ($1) ON CONFLICT DO NOTHING", disc_id)
    server_id = await server_key(conn, disc_id)
    assert server_id is not None
    return server_id


async def user_key(conn: asyncpg.Connection, disc_id: str) -> int | None:
    """users.user_id of a Discord id; None: no row."""
    user_id: int | None = await conn.fetchval("SELECT user_id FROM users WHERE user_disc_id = $1", disc_id)
    return user_id


async def server_key(conn: asyncpg.Connection, disc_id: str) -> int | None:
    """servers.server_id of a workspace; None: no row."""
    server_id: int | None = await conn.fetchval("SELECT server_id FROM servers WHERE server_disc_id = $1", disc_id)
    return server_id


async def set_privacy(conn: asyncpg.Connection, disc_id: str, level: int) -> bool:
    """Standalone only; returns whether the user was registered now (no row had this id)."""
    await _refuse_if_adopted(conn, "a user's privacy level (users.privacy_level, the bot's /personal config)")
    async with conn.transaction():
        new = not await _user_exists(conn, disc_id)
        await ensure_user(conn, disc_id)
        await conn.execute("UPDATE users SET privacy_level = $2 WHERE user_disc_id = $1", disc_id, level)
    return new


async def set_nickname(conn: asyncpg.Connection, disc_id: str, nickname: str | None) -> bool:
    """Standalone only; returns whether the user was registered now."""
    await _refuse_if_adopted(conn, "a saved nickname")
    async with conn.transaction():
        new = not await _user_exists(conn, disc_id)
        await ensure_user(conn, disc_id)
        await conn.execute("UPDATE users SET user_nickname = $2 WHERE user_disc_id = $1", disc_id, nickname)
    return new


async def user(conn: asyncpg.Connection, disc_id: str) -> dict[str, Any] | None:
    """A user's directory facts as the worker reads them: privacy, saved nickname, blacklists."""
    row = await conn.fetchrow("SELECT user_id, user_disc_id, nickname, privacy_level FROM directory_users()"
                              " WHERE user_disc_id = $1", disc_id)
    if row is None:
        return None
    blacklisted_in = await conn.fetch(
        "SELECT w.server_disc_id FROM directory_blacklist() b JOIN directory_workspaces() w USING (server_id)"
        " WHERE b.user_disc_id = $1 ORDER BY 1", disc_id)
    return dict(row) | {"blacklisted_in": [r[0] for r in blacklisted_in]}


async def update_workspace(conn: asyncpg.Connection, disc_id: str, changes: dict[str, object]) -> dict[str, Any]:
    """Apply setting changes (keys of WORKSPACE_SETTINGS) and return the settings as the worker now reads them."""
    adopted = await _adopted(conn)
    if adopted and (bots := [key for key in changes if key not in WORKER_OWNED]):
        raise BotOwned(f"this database is adopted: {', '.join(bots)} is the bot's setting (change it in the"
                       f" bot); only {' and '.join(WORKER_OWNED)} are the worker's")
    async with conn.transaction():
        if adopted and not await _server_exists(conn, disc_id):
            raise UnknownWorkspace(f"the bot has no server {disc_id} (no servers row): the bot registers its"
                                   " servers; check the id (`memoryctl workspace show` reads one back)")
        server_id = await ensure_server(conn, disc_id)
        for key, value in changes.items():
            column = WORKSPACE_SETTINGS[key]  # a fixed whitelist: never a caller's string in SQL
            if adopted:
                await conn.execute(
                    f"INSERT INTO memory_worker.workspace_settings (server_id, {column}) VALUES ($1, $2)"
                    f" ON CONFLICT (server_id) DO UPDATE SET {column} = EXCLUDED.{column}", server_id, value)
            else:
                await conn.execute(f"UPDATE servers SET {column} = $2 WHERE server_disc_id = $1", disc_id, value)
        settings = await workspace(conn, disc_id)
        if settings is None:  # ensure_server() above made the row
            raise UnknownWorkspace(f"no server {disc_id} after registering it")
        return settings


async def workspace(conn: asyncpg.Connection, disc_id: str) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        "SELECT server_disc_id, " + ", ".join(WORKSPACE_SETTINGS.values())
        + " FROM directory_workspaces() WHERE server_disc_id = $1", disc_id)
    return dict(row) if row else None


async def blacklist(conn: asyncpg.Connection, workspace_id: str, user_disc_id: str, *, add: bool) -> bool:
    """Add or remove an entry (standalone only); returns whether anything changed."""
    await _refuse_if_adopted(conn, "the personalization blacklist (personalization_blacklist)")
    async with conn.transaction():
        server_id = await ensure_server(conn, workspace_id)
        if add:
            status = await conn.execute(
                "INSERT INTO personalization_blacklist (server_id, user_disc_id) VALUES ($1, $2)"
                " ON CONFLICT DO NOTHING", server_id, user_disc_id)
        else:
            status = await conn.execute(
                "DELETE FROM personalization_blacklist WHERE server_id = $1 AND user_disc_id = $2",
                server_id, user_disc_id)
    return not status.endswith(" 0")


async def blacklisted(conn: asyncpg.Connection, workspace_id: str) -> list[str]:
    rows = await conn.fetch(
        "SELECT b.user_disc_id FROM directory_blacklist() b JOIN directory_workspaces() s USING (server_id)"
        " WHERE s.server_disc_id = $1 ORDER BY 1", workspace_id)
    return [r[0] for r in rows]


async def link_proxy(conn: asyncpg.Connection, identity: str, namespace: str, host: str) -> None:
    """Register a proxy identity (its synthetic users row) in a namespace hosted by `host`."""
    await _refuse_if_adopted(conn, "a proxy identity")
    async with conn.transaction():
        user_id = await ensure_user(conn, identity)
        await conn.execute(
            "INSERT INTO message_proxy_identities (user_id, namespace_id) VALUES ($1, $2)"
            " ON CONFLICT (user_id) DO UPDATE SET namespace_id = EXCLUDED.namespace_id", user_id, namespace)
        await conn.execute(
            "INSERT INTO message_proxy_namespace_accounts (namespace_id, host_user_disc_id) VALUES ($1, $2)"
            " ON CONFLICT DO NOTHING", namespace, host)


async def unlink_host(conn: asyncpg.Connection, namespace: str, host: str) -> bool:
    await _refuse_if_adopted(conn, "a proxy namespace's hosts")
    status = await conn.execute(
        "DELETE FROM message_proxy_namespace_accounts WHERE namespace_id = $1 AND host_user_disc_id = $2",
        namespace, host)
    return not status.endswith(" 0")


async def proxy(conn: asyncpg.Connection, identity: str) -> dict[str, Any] | None:
    if await _adopted(conn):
        # The bot's identity tables, through the directory functions: hosts, no namespace name.
        row = await conn.fetchrow(
            "SELECT u.user_disc_id, NULL::text AS namespace_id,"
            " coalesce((SELECT array_agg(h.host_user_disc_id ORDER BY h.host_user_disc_id)"
            "   FROM directory_proxy_hosts() h WHERE h.user_id = u.user_id), '{}') AS hosts"
            " FROM directory_users() u WHERE u.user_disc_id = $1"
            " AND EXISTS (SELECT 1 FROM directory_proxy_identities() i WHERE i.user_id = u.user_id)", identity)
        return dict(row) if row else None
    row = await conn.fetchrow(
        "SELECT u.user_disc_id, i.namespace_id,"
        " coalesce(array_agg(a.host_user_disc_id ORDER BY a.host_user_disc_id)"
        "   FILTER (WHERE a.host_user_disc_id IS NOT NULL), '{}') AS hosts"
        " FROM users u JOIN message_proxy_identities i USING (user_id)"
        " LEFT JOIN message_proxy_namespace_accounts a ON a.namespace_id = i.namespace_id"
        " WHERE u.user_disc_id = $1 GROUP BY u.user_disc_id, i.namespace_id", identity)
    return dict(row) if row else None


@dataclass(frozen=True, slots=True)
class MemoryListing:
    memory_id: int
    lineage_id: int
    content: str
    tags: Sequence[str]
    source: str
    manually_written: bool
    created_at: datetime
    last_reinforced_at: datetime | None
    reinforcement_count: int
    idle_days: float
    decay_days: int | None


async def list_memories(conn: asyncpg.Connection, *, workspace_id: str | None = None,
                        user_id: str | None = None, lineage_id: int | None = None) -> list[MemoryListing]:
    """An owner's memories with what decides their fate: protection, idleness, decay setting."""
    common = ("{id} AS memory_id, m.persona_lineage_id AS lineage_id, m.content, coalesce(m.tags, '{{}}') AS tags,"
              " m.source,"
              " m.manually_written, m.created_at, m.last_reinforced_at, m.reinforcement_count,"
              " extract(epoch FROM now() - coalesce(m.last_reinforced_at, m.created_at)) / 86400 AS idle_days")
    if workspace_id is not None:
        rows = await conn.fetch(
            "SELECT " + common.format(id="m.server_memory_id") + ","
            " CASE WHEN s.memory_decay_enabled THEN s.memory_decay_days END AS decay_days"
            " FROM server_memories m JOIN directory_workspaces() s USING (server_id)"
            " WHERE s.server_disc_id = $1 AND ($2::bigint IS NULL OR m.persona_lineage_id = $2)"
            " ORDER BY m.persona_lineage_id, m.server_memory_id", workspace_id, lineage_id)
    else:
        rows = await conn.fetch(
            "SELECT " + common.format(id="m.personal_memory_id") + ", NULL::int AS decay_days"
            " FROM personal_memories m JOIN directory_users() u USING (user_id)"
            " WHERE u.user_disc_id = $1 AND ($2::bigint IS NULL OR m.persona_lineage_id = $2)"
            " ORDER BY m.persona_lineage_id, m.personal_memory_id", user_id, lineage_id)
    return [MemoryListing(**dict(r)) for r in rows]
