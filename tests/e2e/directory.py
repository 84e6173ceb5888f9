"""The bot's side of the database, for the e2e suite.

A bot owns the directory tables (`servers` settings, `users`, `persona_nicknames`) and may
have memories from before the worker existed (legacy or imported rows, some of them old).
Everything else the suite does goes over NATS, like a bot would; assertions on effects may
count the memory tables. The directory rows come from tests/support/directory.py, shared with
the integration tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

# Makes inserts and edits of marked contents fail, as the bot's database side might: with a retryable
# serialization failure ('transient failure...') or a data error no retry can fix ('permanent
# failure...'). Idempotent; other contents are untouched, so it may stay for the whole run.
FAILING_INSERTS = """
CREATE OR REPLACE FUNCTION e2e_failing_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content LIKE 'transient failure%' THEN
        RAISE EXCEPTION 'provoked transient failure' USING ERRCODE = '40001';
    ELSIF NEW.content LIKE 'permanent failure%' THEN
        RAISE EXCEPTION 'provoked permanent failure' USING ERRCODE = '22023';
    END IF;
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER e2e_failing_inserts BEFORE INSERT OR UPDATE OF content ON server_memories
    FOR EACH ROW EXECUTE FUNCTION e2e_failing_inserts();
"""


async def add_old_server_memories(db: asyncpg.Pool, server_id: int, lineage_id: int,
                                  rows: Sequence[tuple[str, int]], *, source: str = "legacy",
                                  manually_written: bool = False) -> list[int]:
    """Pre-existing server memories, `(content, age in days)` each, inserted in the given order.

    Returns their ids in the same order.
    """
    ids = []
    async with db.acquire() as conn, conn.transaction():
        for content, age_days in rows:
            ids.append(await conn.fetchval(
                """
                INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, content,
                                             created_at, updated_at, manually_written, source)
                VALUES ($1, 1, $2, $3, now() - make_interval(days => $4),
                        now() - make_interval(days => $4), $5, $6)
                RETURNING server_memory_id
                """,
                server_id, lineage_id, content, age_days, manually_written, source,
            ))
    return ids


async def server_memories(db: asyncpg.Pool, workspace_id: str, lineage_id: int | None = None) -> list[asyncpg.Record]:
    """The workspace's server memories (optionally of one lineage), by id."""
    return await db.fetch(
        """
        SELECT m.server_memory_id AS id, m.persona_lineage_id AS lineage_id, m.content,
               m.manually_written, m.source
        FROM server_memories m JOIN servers s USING (server_id)
        WHERE s.server_disc_id = $1 AND ($2::int IS NULL OR m.persona_lineage_id = $2)
        ORDER BY m.server_memory_id
        """,
        workspace_id, lineage_id,
    )


async def personal_memories(db: asyncpg.Pool, user_disc_id: str) -> list[asyncpg.Record]:
    return await db.fetch(
        """
        SELECT m.personal_memory_id AS id, m.persona_lineage_id AS lineage_id, m.content,
               m.manually_written, m.source
        FROM personal_memories m JOIN users u USING (user_id)
        WHERE u.user_disc_id = $1
        ORDER BY m.personal_memory_id
        """,
        user_disc_id,
    )


async def eviction_metric_ids(db: asyncpg.Pool, command_id: str) -> list[str]:
    """The opaque event id of a command's eviction metric, from the decision stored with its inbox
    row (the only place that links it to the command; the wire does not); [] without an eviction
    (its facts name no evicted row)."""
    rows = await db.fetch("SELECT decision ->> 'metric_event_id' AS id FROM processed_commands"
                          " WHERE command_id = $1 AND facts ? 'evicted_id'", command_id)
    return [r["id"] for r in rows]


async def processed_count(db: asyncpg.Pool, command_id: str) -> int:
    return await db.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1", command_id)


async def add_old_personal_memories(db: asyncpg.Pool, user_id: int, rows: Sequence[tuple[int, str, int]], *,
                                    source: str = "import", manually_written: bool = False) -> list[int]:
    """Pre-existing personal memories, `(lineage, content, age in days)` each, in the given order."""
    ids = []
    async with db.acquire() as conn, conn.transaction():
        for lineage_id, content, age_days in rows:
            ids.append(await conn.fetchval(
                """
                INSERT INTO personal_memories (user_id, persona_lineage_id, content, created_at, updated_at,
                                               manually_written, source)
                VALUES ($1, $2, $3, now() - make_interval(days => $4), now() - make_interval(days => $4), $5, $6)
                RETURNING personal_memory_id
                """,
                user_id, lineage_id, content, age_days, manually_written, source,
            ))
    return ids


async def set_reinforced(db: asyncpg.Pool, server_memory_id: int, days_ago: int) -> None:
    """What an earlier memory.reinforce left on a legacy row."""
    await db.execute(
        "UPDATE server_memories SET last_reinforced_at = now() - make_interval(days => $2),"
        " reinforcement_count = reinforcement_count + 1 WHERE server_memory_id = $1",
        server_memory_id, days_ago,
    )
