"""The peer: what a bot does today, saving straight to PostgreSQL in-process, the classic way.

Per save: count the owner's rows, and insert (at the cap with decay permitted: delete the one
dormant row first, as the worker would). Plain autocommit statements on an asyncpg pool: no
owner lock (so it can overshoot the cap under concurrency), no inbox, no events,
no queue, no result message. The bot already knows its internal server and user ids (from
its own caches), so none are looked up per save.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass

import asyncpg

from tests.bench.dataset import Spec, World

_COUNT_SERVER = ("SELECT count(*) FROM server_memories WHERE server_id = $1 AND persona_lineage_id = $2")
_COUNT_PERSONAL = ("SELECT count(*) FROM personal_memories WHERE user_id = $1 AND persona_lineage_id IN ($2, 0)")


def _evict(table: str, id_column: str, owner_column: str) -> str:
    """The one dormant row's delete, in the bot's own eviction order (the worker's, as
    tests/integration/test_capacity_conformance.py's cases hold it): the peer is a bot's code,
    not the worker's, so it keeps its own copy of the line, walking the same *_eviction index."""
    return f"""
DELETE FROM {table} WHERE {id_column} = (
    SELECT {id_column} FROM {table}
    WHERE {owner_column} = $1 AND persona_lineage_id = $2 AND NOT manually_written
      AND coalesce(last_reinforced_at, created_at) < now() - make_interval(days => $3)
    ORDER BY last_reinforced_at IS NOT NULL, last_reinforced_at, created_at, {id_column} LIMIT 1)
RETURNING {id_column}"""


_EVICT_SERVER = _evict("server_memories", "server_memory_id", "server_id")
_EVICT_PERSONAL = _evict("personal_memories", "personal_memory_id", "user_id")
_INSERT_SERVER = """
INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, user_id, content, manually_written, source)
VALUES ($1, $2, $3, $4, $5, false, 'model') RETURNING server_memory_id"""
_INSERT_PERSONAL = """
INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source)
VALUES ($1, $2, $3, false, 'model') RETURNING personal_memory_id"""


@dataclass(frozen=True, slots=True)
class Save:
    personal: bool
    owner: int  # server_id or user_id
    lineage: int
    persona_id: int
    teacher: int | None
    content: str
    may_evict: bool
    decay_days: int


@dataclass(frozen=True, slots=True)
class PeerResult:
    concurrency: int
    elapsed_s: float
    latencies_s: list[float]
    statuses: dict[str, int]


async def plan_saves(dsn: str, world: World, specs: list[Spec]) -> list[Save]:
    """What the bot knows before saving: internal ids and the workspace settings (cached)."""
    conn = await asyncpg.connect(dsn)
    try:
        servers = {r["server_disc_id"]: (r["server_id"], r["memory_decay_enabled"], r["memory_decay_days"])
                   for r in await conn.fetch("SELECT server_id, server_disc_id, memory_decay_enabled,"
                                             " memory_decay_days FROM servers")}
        users = {r["user_disc_id"]: r["user_id"] for r in await conn.fetch("SELECT user_id, user_disc_id FROM users")}
    finally:
        await conn.close()
    saves = []
    for spec in specs:
        server_id, decay, decay_days = servers[world.workspace_id(spec.ws)]
        content = spec.content
        if spec.personal:
            owner = users[world.user_id(spec.ws, spec.user)]
        else:
            owner = server_id
        saves.append(Save(spec.personal, owner, world.lineage(spec.ws), world.persona_id(spec.ws),
                          users.get(world.user_id(spec.ws, spec.user)), content, decay, decay_days))
    return saves


async def run_peer(dsn: str, saves: list[Save], *, cap: int, concurrency: int) -> PeerResult:
    pool = await asyncpg.create_pool(dsn, min_size=concurrency, max_size=concurrency)
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    work = iter(saves)

    async def save_one(conn: asyncpg.Connection, s: Save) -> str:
        if s.personal:
            count = await conn.fetchval(_COUNT_PERSONAL, s.owner, s.lineage)
        else:
            count = await conn.fetchval(_COUNT_SERVER, s.owner, s.lineage)
        evicted = False
        if count >= cap:
            if not s.may_evict:
                return "limit_exceeded"
            victim = await conn.fetchval(_EVICT_PERSONAL if s.personal else _EVICT_SERVER, s.owner, s.lineage,
                                         s.decay_days)
            if victim is None:
                return "limit_exceeded"
            evicted = True
        if s.personal:
            await conn.fetchval(_INSERT_PERSONAL, s.owner, s.lineage, s.content)
        else:
            await conn.fetchval(_INSERT_SERVER, s.owner, s.persona_id, s.lineage, s.teacher, s.content)
        return "saved_with_eviction" if evicted else "saved"

    async def lane() -> None:
        for s in work:
            started = time.perf_counter()
            async with pool.acquire() as conn:
                status = await save_one(conn, s)
            latencies.append(time.perf_counter() - started)
            statuses[status] += 1

    try:
        started = time.perf_counter()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    finally:
        await pool.close()
    return PeerResult(concurrency, elapsed, latencies, dict(statuses))
