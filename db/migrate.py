"""Apply numbered .sql migrations, once each, safely when several workers start together."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

# Any constant works; it only has to be the same for every process migrating this database.
_MIGRATION_LOCK = 0x6D656D6F7279  # "memory"
_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    found = []
    for entry in resources.files("db.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in db/migrations: {versions}")
    return found


async def _applied(conn: asyncpg.Connection) -> set[int] | None:
    """Versions already applied, or None before the first migration ever ran."""
    if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
        return None
    return {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Apply pending migrations; returns the names applied. Each runs in its own transaction.

    When nothing is pending it only reads: a worker running as a role without DDL rights
    (deploy/postgres/worker_role.sql) starts after an owner applied the migrations.
    """
    done = await _applied(conn)
    if done is not None and {m.version for m in available()} <= done:
        return []
    applied_now: list[str] = []
    # A session lock, held across the loop: a second worker waits, then finds nothing to do.
    await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for migration in available():
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version, migration.name,
                )
            applied_now.append(migration.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied_now


async def migrate_dsn(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        return await migrate(conn)
    finally:
        await conn.close()
