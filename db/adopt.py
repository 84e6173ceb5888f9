"""Adopting a bot's database in place (docs/design.md, section 7.1): what is there, and what adoption adds.

`inspect()` only reads. `adopt()` applies everything in one transaction: the worker's schema
and ledger, the adopted layout's base (db/adopted.sql: the worker's columns on the bot's memory
tables, its own settings and metric tables), then the same steps that bring any database up
to date (db/migrate.py: the migrations, the directory functions that read the bot's tables,
the worker's functions). A failure anywhere rolls all of it back; a second run finds nothing
to add. Bot rows are never rewritten (db/adopted.sql).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from db import directory_functions, functions, migrate
from db.connection import WORKER_SCHEMA
from worker.domain.workspace import Limits

# What the worker needs of the bot's tables to run at all.
REQUIRED = {
    "servers": ("server_id", "server_disc_id"),
    "users": ("user_id", "user_disc_id"),
    "server_memories": ("server_memory_id", "server_id", "persona_id", "persona_lineage_id", "user_id",
                        "content", "tags", "created_at"),
    "personal_memories": ("personal_memory_id", "user_id", "persona_lineage_id", "content", "tags", "created_at"),
}
# Tables counted in the dry run, where present.
COUNTED = ("servers", "users", "server_memories", "personal_memories", "personalization_blacklist",
           "server_member_permissions_configs", "server_notice_embeds_configs", "server_channel_scope_configs",
           "user_personalization_configs", "user_persona_naming_preferences", "external_identities",
           "message_proxy_identities", "message_proxy_namespace_accounts", "metric_samples")


class AdoptionError(RuntimeError):
    """The database cannot be adopted as it is; nothing was changed."""


@dataclass
class Findings:
    mode: str | None
    bot_schema_version: str | None
    bot_migrations: int
    rows: dict[str, int]
    at_cap: list[str]
    sources: list[directory_functions.Source]
    additions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what the worker needs and did not find


async def _bot_version(conn: asyncpg.Connection, catalog: directory_functions.Catalog) -> tuple[str | None, int]:
    """The last migration in the bot's own ledger (TomoriBot: schema_migrations(id, name))."""
    if not (catalog.has("schema_migrations", "name") and catalog.has("schema_migrations", "id")):
        return None, 0
    row = await conn.fetchrow("SELECT (SELECT name FROM public.schema_migrations ORDER BY id DESC LIMIT 1) AS name,"
                              " (SELECT count(*) FROM public.schema_migrations) AS n")
    return row["name"], row["n"]


async def _at_cap(conn: asyncpg.Connection, limits: Limits) -> list[str]:
    """Owners whose memories already reach a cap: they keep every row; saves refuse or evict."""
    found = []
    for r in await conn.fetch(
            "SELECT s.server_disc_id, m.persona_lineage_id AS lineage, count(*) AS n FROM public.server_memories m"
            " JOIN public.servers s ON s.server_id = m.server_id GROUP BY 1, 2 HAVING count(*) >= $1 ORDER BY 3 DESC, 1",
            limits.max_server_memories):
        found.append(f"server {r['server_disc_id']} lineage {r['lineage']}: {r['n']} of {limits.max_server_memories}")
    for r in await conn.fetch(
            "WITH per AS (SELECT user_id, persona_lineage_id AS lineage, count(*) AS n FROM public.personal_memories"
            "             GROUP BY 1, 2),"
            " global AS (SELECT user_id, n FROM per WHERE lineage = 0),"
            " owners AS (SELECT p.user_id, p.lineage, p.n + coalesce(g.n, 0) AS n FROM per p"
            "            LEFT JOIN global g ON g.user_id = p.user_id WHERE p.lineage <> 0"
            "            UNION ALL SELECT g.user_id, 0, g.n FROM global g"
            "            WHERE NOT EXISTS (SELECT 1 FROM per o WHERE o.user_id = g.user_id AND o.lineage <> 0))"
            " SELECT u.user_disc_id, o.lineage, o.n FROM owners o JOIN public.users u ON u.user_id = o.user_id"
            " WHERE o.n >= $1 ORDER BY 3 DESC, 1",
            limits.max_personal_memories):
        found.append(f"user {r['user_disc_id']} lineage {r['lineage']} (with global rows): {r['n']} of"
                     f" {limits.max_personal_memories}")
    return found


def _missing_required(catalog: directory_functions.Catalog) -> list[str]:
    return [f"{table}.{column}" for table, columns in REQUIRED.items() for column in columns
            if not catalog.has(table, column)]


async def inspect(conn: asyncpg.Connection, limits: Limits) -> Findings:
    """What is there and what adoption would add; reads only."""
    catalog = await directory_functions.read_catalog(conn)
    current = await migrate.mode(conn)
    version, count = await _bot_version(conn, catalog)
    rows = {}
    for table in COUNTED:
        if catalog.has_table(table):
            rows[table] = await conn.fetchval(f"SELECT count(*) FROM public.{table}")
    missing = _missing_required(catalog)
    at_cap = [] if missing else await _at_cap(conn, limits)
    _, sources = directory_functions.adopted(catalog)
    findings = Findings(current, version, count, rows, at_cap, sources, missing=missing)
    if current is None and not missing:
        findings.additions = [f"schema {WORKER_SCHEMA} with its own ledger {WORKER_SCHEMA}.schema_migrations",
                              f"the adopted layout's base db/{migrate.LAYOUTS['adopted']}"
                              f" ({migrate.summary(migrate.layout('adopted'))})"]
        findings.additions += [f"worker migration {m.name} ({m.summary})" for m in migrate.available()]
        findings.additions.append(f"directory functions in {WORKER_SCHEMA} reading the bot's tables as above")
        findings.additions.append(f"the worker's functions in {WORKER_SCHEMA}: {', '.join(functions.files())}")
    return findings


async def adopt(conn: asyncpg.Connection, limits: Limits) -> Findings:
    """Adopt in one transaction (see the module docstring); returns what was found and added."""
    try:
        return await _adopt(conn, limits)
    except asyncpg.PostgresError as exc:
        raise AdoptionError(f"adoption failed and nothing was changed: {type(exc).__name__}: {exc}") from exc


async def _adopt(conn: asyncpg.Connection, limits: Limits) -> Findings:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", migrate.MIGRATION_LOCK)
        findings = await inspect(conn, limits)
        if findings.mode == "adopted":
            return findings  # nothing to add: `memoryctl migrate` brings an adopted database up to date
        if findings.mode == "standalone":
            raise AdoptionError("this database is already the worker's own (standalone mode): nothing to adopt")
        catalog = await directory_functions.read_catalog(conn)
        if missing := _missing_required(catalog):
            raise AdoptionError("not a TomoriBot-shaped database: missing " + ", ".join(missing))
        await migrate.create_layout(conn, "adopted", findings.bot_schema_version)
        await migrate.apply_pending(conn, await migrate.pending(conn, "adopted"), "adopted")
    return findings
