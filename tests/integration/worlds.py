"""The two database modes the worker's writes are tested in (memory.update, the memory.manual import),
behind one interface: the standalone layout (the worker's own directory tables,
tests/support/directory.py) and an adopted TomoriBot-shaped database (tests/tomoribot.py's seeded
database, adopted with `memoryctl adopt`, written to as the bot writes its tables). Each makes the
rows a test needs (a workspace and its persona, users, memories, a blacklist entry, a proxy identity
with its hosts) in its own tables; the worker reads them through the directory functions either way.
One database per mode and module: tests keep apart by unique ids (the adopted one's seeded rows are
in `seeded`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from db.pool import create_pool
from tests import tomoribot
from tests.conftest import clone_database, unique, worker_env
from tests.memoryctl import memoryctl
from tests.support import directory

MODES = ("standalone", "adopted")


@dataclass
class World:
    """A database in one mode, and the bot's writes to it."""

    mode: str
    pool: asyncpg.Pool
    seeded: tomoribot.World | None = None  # adopted: the ids of the rows tests/tomoribot.py's seed wrote

    async def workspace(self, *, self_teaching: bool = True, personal_memories: bool = True) -> tuple[str, int]:
        """A new guild workspace: its Discord id and server_id."""
        ws = unique()
        if self.mode == "standalone":
            return ws, await directory.add_server(self.pool, ws, self_teaching=self_teaching,
                                                  personal_memories=personal_memories)
        server_id = await self.pool.fetchval("INSERT INTO servers (server_disc_id) VALUES ($1) RETURNING server_id", ws)
        await self.pool.execute(
            "INSERT INTO server_member_permissions_configs (server_id, self_teaching_enabled, personal_memories_enabled)"
            " VALUES ($1, $2, $3)", server_id, self_teaching, personal_memories)
        return ws, server_id

    async def decay(self, server_id: int, days: int) -> None:
        """Decay on for a workspace (the worker's own setting in both layouts): its rows dormant
        for `days` may be forgotten at the cap."""
        if self.mode == "standalone":
            await self.pool.execute("UPDATE servers SET memory_decay_enabled = true, memory_decay_days = $2"
                                    " WHERE server_id = $1", server_id, days)
            return
        await self.pool.execute(
            "INSERT INTO memory_worker.workspace_settings (server_id, memory_decay_enabled, memory_decay_days)"
            " VALUES ($1, true, $2) ON CONFLICT (server_id) DO UPDATE SET memory_decay_enabled = true,"
            " memory_decay_days = excluded.memory_decay_days", server_id, days)

    async def persona(self, server_id: int, lineage: int) -> int:
        """A persona id a model's server save may name (TomoriBot's rows refer to its personas table)."""
        if self.mode == "standalone":
            return 1
        persona_id: int = await self.pool.fetchval(
            "INSERT INTO personas (server_id, persona_nickname, persona_lineage_id) VALUES ($1, 'Tomori', $2)"
            " RETURNING persona_id", server_id, lineage)
        return persona_id

    async def user(self, disc_id: str | None = None, *, privacy: int = 0) -> tuple[str, int]:
        """A person the bot knows: their Discord id and user_id."""
        disc_id = disc_id or unique()
        if self.mode == "standalone":
            return disc_id, await directory.add_user(self.pool, disc_id, privacy=privacy)
        user_id = await self.pool.fetchval(
            "INSERT INTO users (user_disc_id, privacy_level) VALUES ($1, $2) RETURNING user_id", disc_id, privacy)
        await self.pool.execute("INSERT INTO user_personalization_configs (user_id) VALUES ($1)", user_id)
        return disc_id, user_id

    async def blacklist(self, server_id: int, disc_id: str) -> None:
        await directory.blacklist(self.pool, server_id, disc_id)  # the same table in both layouts

    async def proxy(self, hosts: Sequence[str]) -> tuple[str, int]:
        """A PluralKit identity hosted by `hosts` (none: no host link): its synthetic id and user_id."""
        synthetic = f"pk:{uuid.uuid4()}"
        if self.mode == "standalone":
            namespace = None if not hosts else f"ns-{uuid.uuid4().hex}"
            return synthetic, await directory.add_proxy_identity(self.pool, synthetic, namespace_id=namespace,
                                                                 hosts=hosts)
        _, user_id = await self.user(synthetic)
        external = await self.pool.fetchval(
            "INSERT INTO external_identities (kind, external_key, user_id, instance_id)"
            " VALUES ('pluralkit_member', $1, $2, 'pluralkit:official') RETURNING external_identity_id",
            uuid.uuid4().hex[:5], user_id)
        namespace = await self.pool.fetchval(
            "INSERT INTO message_proxy_namespaces (service_id, namespace_key, instance_id)"
            " VALUES ('pluralkit', $1, 'pluralkit:official') RETURNING message_proxy_namespace_id", uuid.uuid4().hex)
        await self.pool.execute("INSERT INTO message_proxy_identities (message_proxy_namespace_id,"
                                " external_identity_id) VALUES ($1, $2)", namespace, external)
        for host in hosts:
            await self.pool.execute("INSERT INTO message_proxy_namespace_accounts (message_proxy_namespace_id,"
                                    " host_user_disc_id) VALUES ($1, $2)", namespace, host)
        return synthetic, user_id

    async def server_memory(self, server_id: int, lineage: int, content: str, *, tags: Sequence[str] = (),
                            manual: bool = False, source: str = "legacy") -> int:
        memory_id: int = await self.pool.fetchval(
            "INSERT INTO server_memories (server_id, persona_lineage_id, content, tags, manually_written, source,"
            " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, now() - interval '90 days',"
            " now() - interval '90 days') RETURNING server_memory_id",
            server_id, lineage, content, list(tags), manual, source)
        return memory_id

    async def personal_memory(self, user_id: int, lineage: int, content: str, *, manual: bool = False,
                              source: str = "legacy") -> int:
        memory_id: int = await self.pool.fetchval(
            "INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source,"
            " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, now() - interval '90 days',"
            " now() - interval '90 days') RETURNING personal_memory_id",
            user_id, lineage, content, manual, source)
        return memory_id


@asynccontextmanager
async def world(mode: str, pg_server, template_db: str) -> AsyncIterator[World]:
    """A fresh database in `mode`, with a pool as the worker makes it."""
    if mode == "standalone":
        dsn = await clone_database(pg_server, template_db)
        seeded = None
    else:
        dsn, seeded = await tomoribot.seeded_database(pg_server.dsn)
        adopted = await memoryctl(["adopt"], worker_env("nats://127.0.0.1:1", dsn))
        assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    pool = await create_pool(dsn, min_size=1, max_size=20)
    try:
        yield World(mode, pool, seeded)
    finally:
        await pool.close()
