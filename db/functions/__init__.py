"""The worker's SQL functions: one file each, the one place each is written.

A function is not a migration. Migrations (db/migrations/) hold what must run once: tables,
columns, indexes, data moves. A function's file holds its body, its ALTERs (a CREATE OR
REPLACE resets settings such as plan_cache_mode, so they belong beside it) and why it is
written the way it is; changing a function means changing its file, nothing else.

`memoryctl migrate` (and `run`, `adopt`; db/migrate.py) compares the fingerprint of these
files with the one the database's functions were made from
(memory_worker.database_mode.functions_fingerprint) and, when they differ, makes them again
in one transaction, after the migrations: every function of the worker's schema that is not
a directory function (db/directory_functions.py makes those, from the bot's tables) is dropped, so a
function removed from this folder is gone from the database too, and the files are run.
Bodies are checked once every function exists, so the files may call each other in any order.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

import asyncpg

from db.connection import WORKER_SCHEMA
from db.directory_functions import FUNCTION_NAMES as DIRECTORY_FUNCTIONS


@cache
def files() -> dict[str, str]:
    """Each function's file, by name (the file name without .sql), in name order."""
    found = {entry.name.removesuffix(".sql"): entry.read_text("utf-8")
             for entry in resources.files(__name__).iterdir() if entry.name.endswith(".sql")}
    return dict(sorted(found.items()))


def source(name: str) -> str:
    """The text of one function's file."""
    return files()[name]


def ddl() -> str:
    return "\n".join(files().values())


def fingerprint() -> str:
    return hashlib.sha256(ddl().encode()).hexdigest()


async def made_from(conn: asyncpg.Connection) -> str | None:
    """The fingerprint the database's functions were made from; None before they ever were
    (a database older than migration 008 has no column for it yet)."""
    found: str | None = await conn.fetchval(
        f"SELECT to_jsonb(m) ->> 'functions_fingerprint' FROM {WORKER_SCHEMA}.database_mode m")
    return found


async def apply(conn: asyncpg.Connection) -> None:
    """Make the functions from the files, in the caller's transaction."""
    stale = await conn.fetch(
        "SELECT format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))"
        " FROM pg_catalog.pg_proc p"
        " JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = $1 AND p.prokind = 'f' AND p.proname <> ALL ($2::text[])",
        WORKER_SCHEMA, sorted(DIRECTORY_FUNCTIONS))
    for (signature,) in stale:
        await conn.execute(f"DROP FUNCTION {signature}")
    # First without checking bodies (a function may call one made after it), then again with:
    # a body that names a missing table, column or function fails here, not at its first call.
    await conn.execute("SET LOCAL check_function_bodies = off")
    await conn.execute(ddl())
    await conn.execute("SET LOCAL check_function_bodies = on")
    await conn.execute(ddl())
    await conn.execute(f"UPDATE {WORKER_SCHEMA}.database_mode SET functions_fingerprint = $1", fingerprint())
