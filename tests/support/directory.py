"""The bot's side of the database for every test layer: the directory rows (`servers`,
`users`, persona nicknames, proxy identities, the blacklist) a bot writes and the worker only
reads. One writer for integration and e2e tests alike; `db` is a connection or a pool.
Writes are upserts, so a test may set a row's settings again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import asyncpg

from tests.support.commands import TRIGGERER_ID

Db: TypeAlias = asyncpg.Connection | asyncpg.Pool


async def add_server(db: Db, workspace_id: str, *, self_teaching: bool = True, personal_memories: bool = True,
                     decay: bool = False, decay_days: int = 30) -> int:
    """The workspace's `servers` row with these settings; returns its server_id."""
    return await db.fetchval(
        """
        INSERT INTO servers (server_disc_id, self_teaching_enabled, personal_memories_enabled,
                             memory_decay_enabled, memory_decay_days)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (server_disc_id) DO UPDATE SET
            self_teaching_enabled = EXCLUDED.self_teaching_enabled,
            personal_memories_enabled = EXCLUDED.personal_memories_enabled,
            memory_decay_enabled = EXCLUDED.memory_decay_enabled,
            memory_decay_days = EXCLUDED.memory_decay_days
        RETURNING server_id
        """,
        workspace_id, self_teaching, personal_memories, decay, decay_days,
    )


async def add_user(db: Db, disc_id: str, *, nickname: str | None = None, privacy: int = 0,
                   prefix: str | None = None, suffix: str | None = None, addressing_style: str | None = None) -> int:
    """A `users` row (the bot has met this person), with the naming they set for themselves;
    returns its user_id."""
    return await db.fetchval(
        """
        INSERT INTO users (user_disc_id, user_nickname, privacy_level, prefix_override, suffix_override,
                           addressing_style)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (user_disc_id) DO UPDATE SET
            user_nickname = EXCLUDED.user_nickname, privacy_level = EXCLUDED.privacy_level,
            prefix_override = EXCLUDED.prefix_override, suffix_override = EXCLUDED.suffix_override,
            addressing_style = EXCLUDED.addressing_style
        RETURNING user_id
        """,
        disc_id, nickname, privacy, prefix, suffix, addressing_style,
    )


async def add_triggerer(db: Db, disc_id: str = TRIGGERER_ID) -> int:
    """The users row of the person who triggers the commands of tests/support/commands.py."""
    return await add_user(db, disc_id, nickname="someone")


async def register_triggerer(dsn: str) -> None:
    """add_triggerer() in the database at `dsn` (a harness's own, once migrated)."""
    conn = await asyncpg.connect(dsn)
    try:
        await add_triggerer(conn)
    finally:
        await conn.close()


async def set_persona_nickname(db: Db, lineage_id: int, user_id: int, nickname: str | None, *,
                               prefix: str | None = None, suffix: str | None = None) -> None:
    """What the person set for one persona lineage: a nickname and affix overrides."""
    await db.execute(
        """
        INSERT INTO persona_nicknames (lineage_id, user_id, nickname, prefix_override, suffix_override)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (lineage_id, user_id) DO UPDATE SET nickname = EXCLUDED.nickname,
            prefix_override = EXCLUDED.prefix_override, suffix_override = EXCLUDED.suffix_override
        """,
        lineage_id, user_id, nickname, prefix, suffix,
    )


async def add_proxy_identity(db: Db, synthetic_id: str, *, namespace_id: str | None,
                             hosts: Sequence[str] = ()) -> int:
    """A stable proxy identity: its synthetic users row, its namespace, the namespace's host accounts.

    `namespace_id` None leaves the identity without any host link.
    """
    user_id = await add_user(db, synthetic_id)
    if namespace_id is not None:
        await db.execute("INSERT INTO message_proxy_identities (user_id, namespace_id) VALUES ($1, $2)",
                         user_id, namespace_id)
        for host in hosts:
            await db.execute("INSERT INTO message_proxy_namespace_accounts (namespace_id, host_user_disc_id)"
                             " VALUES ($1, $2)", namespace_id, host)
    return user_id


async def blacklist(db: Db, server_id: int, user_disc_id: str) -> None:
    await db.execute("INSERT INTO personalization_blacklist (server_id, user_disc_id) VALUES ($1, $2)",
                     server_id, user_disc_id)
