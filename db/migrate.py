"""The worker's schema: its mode, its own migration ledger, safe when several workers start together.

Everything the worker owns lives in the schema `memory_worker` (db/connection.py), with its
ledger `memory_worker.schema_migrations` (TomoriBot's own `public.schema_migrations` is never
touched). A database is in one of two modes (docs/design.md, section 7.1), recorded in
`memory_worker.database_mode`, and starts from that mode's base layout, frozen as the first
release made it (LAYOUTS):

- standalone: an empty database, given the standalone tables (db/standalone.sql) by the first
  `migrate`;
- adopted: a bot's database, adopted in place by `memoryctl adopt` (db/adopt.py), given the
  worker's columns and tables beside the bot's (db/adopted.sql).

A database that holds a bot's tables but was not adopted is refused, naming the command. In
either mode the same steps then bring it up to date (apply_pending): the numbered migrations
of db/migrations/ not yet applied (every schema change after the first release), the
directory functions (db/directory_functions.py) when what they should read changed, and the worker's own
functions (db/functions/) when their files changed. A fresh database is thus made exactly as
an old one is upgraded.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg
import structlog

from db import directory_functions, functions
from db.connection import BOT_SCHEMA, DEFAULT_TIMEOUTS, WORKER_SCHEMA, Timeouts, connect

log = structlog.get_logger("migrate")

# Any constant works; it only has to be the same for every process migrating this database.
MIGRATION_LOCK = 0x6D656D6F7279  # "memory"
_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Tables whose presence in `public` means the database already belongs to a bot.
BOT_TABLES = ("servers", "users", "server_memories", "personal_memories")
# Each mode's base layout: frozen, every later change is a migration.
LAYOUTS = {"standalone": "standalone.sql", "adopted": "adopted.sql"}
ADOPT_HINT = ("run `memoryctl adopt --dry-run` to see what adoption would do, then `memoryctl adopt`"
              " (README: \"Adopting an existing TomoriBot database\")")


class NotAdopted(RuntimeError):
    """The database holds a bot's tables and was not adopted."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def summary(self) -> str:
        return summary(self.sql)


def summary(sql: str) -> str:
    """What a migration or base layout adds, from its first line (`-- Summary: ...`), for
    `memoryctl adopt` and `migrate`."""
    first = sql.split("\n", 1)[0]
    return first.removeprefix("-- Summary:").strip().rstrip(".") if first.startswith("-- Summary:") else ""


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


async def mode(conn: asyncpg.Connection) -> str | None:
    """'standalone', 'adopted', or None for a database the worker has not set up."""
    if await conn.fetchval("SELECT to_regclass($1)", f"{WORKER_SCHEMA}.database_mode") is None:
        return None
    found: str | None = await conn.fetchval(f"SELECT mode FROM {WORKER_SCHEMA}.database_mode")
    return found


async def bot_tables(conn: asyncpg.Connection) -> list[str]:
    return [r[0] for r in await conn.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1"
        " AND table_name = ANY($2::text[]) ORDER BY 1", BOT_SCHEMA, list(BOT_TABLES))]


async def directory_bodies(conn: asyncpg.Connection, current_mode: str) -> dict[str, str]:
    if current_mode == "standalone":
        return directory_functions.STANDALONE
    bodies, _ = directory_functions.adopted(await directory_functions.read_catalog(conn))
    return bodies


def fingerprint(bodies: dict[str, str]) -> str:
    return hashlib.sha256(directory_functions.ddl(bodies).encode()).hexdigest()


async def _applied(conn: asyncpg.Connection) -> set[int]:
    return {r[0] for r in await conn.fetch(f"SELECT version FROM {WORKER_SCHEMA}.schema_migrations")}


@dataclass(frozen=True, slots=True)
class Pending:
    """What migrate() has to do on a database: migrations not applied, the directory bodies
    when they must be made again, and whether the worker's functions must be."""

    migrations: list[Migration]
    directory: dict[str, str] | None
    functions: bool

    def __bool__(self) -> bool:
        return bool(self.migrations) or self.directory is not None or self.functions

    def needs(self) -> list[str]:
        """What it is, in words (for a role that may not do it)."""
        return ([m.name for m in self.migrations]
                + (["the directory functions (the bot's tables changed)"] if self.directory is not None else [])
                + (["the worker's functions (db/functions/ changed)"] if self.functions else []))


async def pending(conn: asyncpg.Connection, current_mode: str) -> Pending:
    done = await _applied(conn)
    bodies = await directory_bodies(conn, current_mode)
    stored = await conn.fetchval(f"SELECT directory_fingerprint FROM {WORKER_SCHEMA}.database_mode")
    return Pending([m for m in available() if m.version not in done],
                   bodies if stored != fingerprint(bodies) else None,
                   await functions.made_from(conn) != functions.fingerprint())


async def create_worker_schema(conn: asyncpg.Connection, new_mode: str, bot_version: str | None = None) -> None:
    """The schema, its ledger and its mode row (in the caller's transaction)."""
    await conn.execute(f"""
        CREATE SCHEMA {WORKER_SCHEMA};
        CREATE TABLE {WORKER_SCHEMA}.schema_migrations (
            version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
        -- One row: the mode this database runs in, chosen once (docs/design.md, section 7.1).
        CREATE TABLE {WORKER_SCHEMA}.database_mode (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            mode text NOT NULL CHECK (mode IN ('standalone', 'adopted')),
            bot_schema_version text,
            directory_fingerprint text,
            chosen_at timestamptz NOT NULL DEFAULT now());
    """)
    await conn.execute(f"INSERT INTO {WORKER_SCHEMA}.database_mode (mode, bot_schema_version) VALUES ($1, $2)",
                       new_mode, bot_version)


async def apply_directory(conn: asyncpg.Connection, bodies: dict[str, str]) -> None:
    await conn.execute(directory_functions.ddl(bodies))
    await conn.execute(f"UPDATE {WORKER_SCHEMA}.database_mode SET directory_fingerprint = $1", fingerprint(bodies))


async def apply_migration(conn: asyncpg.Connection, migration: Migration) -> None:
    await conn.execute(migration.sql)
    await conn.execute(f"INSERT INTO {WORKER_SCHEMA}.schema_migrations (version, name) VALUES ($1, $2)",
                       migration.version, migration.name)


def layout(new_mode: str) -> str:
    """The mode's base layout (LAYOUTS), as SQL."""
    return resources.files("db").joinpath(LAYOUTS[new_mode]).read_text("utf-8")


async def create_layout(conn: asyncpg.Connection, new_mode: str, bot_version: str | None = None) -> None:
    """The worker's schema with its mode, then the mode's base layout (in the caller's
    transaction); apply_pending() then brings it up to date."""
    await create_worker_schema(conn, new_mode, bot_version)
    await conn.execute(layout(new_mode))
    log.info("base_layout_created", mode=new_mode)


async def apply_pending(conn: asyncpg.Connection, todo: Pending, current_mode: str) -> list[str]:
    """What `todo` holds, each step in a transaction of its own (a savepoint inside the
    caller's); returns the names of the migrations applied."""
    applied: list[str] = []
    # Migrations first: a directory function may read a column a migration adds (010), and
    # no migration reads a directory function.
    for migration in todo.migrations:
        async with conn.transaction():
            await apply_migration(conn, migration)
        applied.append(migration.name)
    if todo.directory is not None:
        async with conn.transaction():
            await apply_directory(conn, todo.directory)
        log.info("directory_functions_made", mode=current_mode)
    if todo.functions:
        async with conn.transaction():
            await functions.apply(conn)
        log.info("worker_functions_made", fingerprint=functions.fingerprint()[:12])
    return applied


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Set up or bring up to date; returns the names of the migrations applied now.

    When nothing is pending it only reads: a worker running as a role without DDL rights
    (deploy/postgres/worker_role.sql) starts after an owner applied the migrations. Raises
    NotAdopted on a bot database that `memoryctl adopt` has not adopted.
    """
    current = await mode(conn)
    if current is not None and not await pending(conn, current):
        return []
    if current is None and (tables := await bot_tables(conn)):
        raise NotAdopted(f"this database already holds a bot's tables ({', '.join(tables)}) and was not"
                         f" adopted: {ADOPT_HINT}")
    # A session lock, held across the steps: a second worker waits, then finds nothing to do.
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        current = await mode(conn)
        if current is None:
            async with conn.transaction():
                if tables := await bot_tables(conn):  # a bot's tables appeared meanwhile
                    raise NotAdopted(f"this database holds a bot's tables ({', '.join(tables)}): {ADOPT_HINT}")
                await create_layout(conn, "standalone")
            current = "standalone"
        todo = await pending(conn, current)
        try:
            applied_now = await apply_pending(conn, todo, current)
        except asyncpg.InsufficientPrivilegeError as exc:
            # The worker's own role starts here too: say what the owner must run.
            raise RuntimeError(f"the database needs {', '.join(todo.needs())}, and this role may not change the"
                               f" schema ({exc}): run `memoryctl migrate` as the schema owner") from exc
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    return applied_now


async def migrate_dsn(dsn: str) -> list[str]:
    return (await prepare_dsn(dsn))[0]


async def prepare_dsn(dsn: str, timeouts: Timeouts = DEFAULT_TIMEOUTS) -> tuple[list[str], str]:
    """migrate(), then the mode the database runs in (the worker states it at start-up).
    A statement is never cut short here (a migration takes what it takes), the connection
    attempt is: a vanished database fails the start-up within `timeouts.connect_s`."""
    conn = await connect(dsn, Timeouts(connect_s=timeouts.connect_s))
    try:
        applied = await migrate(conn)
        now = await mode(conn)
        if now is None:  # migrate() records the mode before anything else
            raise RuntimeError("the database has no mode after migrating")
        return applied, now
    finally:
        await conn.close()
