"""`memoryctl migrate` and `memoryctl adopt [--dry-run]`: setting up the worker's schema."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

import asyncpg

from db import adopt, functions
from db.migrate import NotAdopted, available, migrate, mode
from worker.cli import reach, terminal
from worker.domain.workspace import Limits


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("migrate", help="set up the worker's schema or bring it up to date (standalone or adopted)",
                   description="Set up an empty database (the standalone layout) or bring the worker's schema up to"
                               " date, and make the directory functions again when the bot's tables changed and the"
                               " worker's functions when db/functions/ changed. The"
                               " database: DATABASE_URL, else the one of a running `make run`, else the embedded"
                               " PostgreSQL an earlier `make run` made under MEMORY_DATA_DIR (default .data).")
    m.add_argument("--embedded", action="store_true",
                   help="with no DATABASE_URL and no `make run`: create the embedded PostgreSQL under MEMORY_DATA_DIR")
    p = sub.add_parser("adopt", help="adopt an existing TomoriBot database in place (one transaction)",
                       description="Adopt the TomoriBot database of DATABASE_URL (a URL of the role that owns the"
                                   " bot's tables) in place, in one transaction; --dry-run first. Caps are read"
                                   " from MAX_SERVER_MEMORIES and MAX_PERSONAL_MEMORIES. DATABASE_URL unset: the"
                                   " database of a running `make run`, else the embedded PostgreSQL an earlier `make run` made"
                                   " under MEMORY_DATA_DIR (default .data).")
    p.add_argument("--dry-run", action="store_true", help="say what was found and what would be added; change nothing")


async def run_migrate(database_url: str, out: Callable[[str], None] = terminal.say) -> int:
    conn = await reach.database_connection(database_url)
    try:
        before = await _fingerprints(conn)
        applied = await migrate(conn)
        after = await _fingerprints(conn)
        out(f"database mode: {await mode(conn)}")
        if after[0] != before[0]:
            out("directory functions: made for the tables as they are now")
        else:
            out("directory functions: unchanged (they already read the tables as they are now)")
        if after[1] != before[1]:
            out(f"worker functions: made from db/functions/ ({len(functions.files())} files)")
        else:
            out("worker functions: unchanged")
    except NotAdopted as exc:
        out(f"memoryctl migrate: {exc}")
        return 2
    finally:
        await conn.close()
    summaries = {m.name: m.summary for m in available()}
    out("applied: " + (", ".join(f"{name} ({summaries[name]})" for name in applied) if applied
                       else "nothing (up to date)"))
    return 0


async def _fingerprints(conn: asyncpg.Connection) -> tuple[str | None, str | None]:
    """What the directory functions and the worker's functions were last made from."""
    if await mode(conn) is None:
        return None, None
    directory: str | None = await conn.fetchval("SELECT directory_fingerprint FROM memory_worker.database_mode")
    return directory, await functions.made_from(conn)


async def run_adopt(args: argparse.Namespace, database_url: str, limits: Limits,
                    out: Callable[[str], None] = terminal.say) -> int:
    conn = await reach.database_connection(database_url)
    try:
        if args.dry_run:
            findings = await adopt.inspect(conn, limits)
        else:
            try:
                findings = await adopt.adopt(conn, limits)
            except adopt.AdoptionError as exc:
                out(f"memoryctl adopt: {exc}")
                return 2
    finally:
        await conn.close()
    if args.dry_run and (why := _cannot_adopt(findings)):
        out(f"memoryctl adopt --dry-run: cannot adopt this database: {why}")
        return 2
    _report(findings, dry_run=args.dry_run, out=out)
    return 0


def _cannot_adopt(f: adopt.Findings) -> str | None:
    """Why adopting would be refused, said before anything else (None: it can be adopted)."""
    if f.mode is not None or not f.missing:
        return None
    if not f.rows:
        return ("it holds none of TomoriBot's tables (an empty database?). Is DATABASE_URL the bot's database?"
                " To give the worker a database of its own instead, `memoryctl migrate` sets one up")
    return ("not a TomoriBot-shaped database: missing " + ", ".join(f.missing)
            + (f" (found: {', '.join(f.rows)})" if f.rows else "") + ". Is DATABASE_URL the bot's database?")


def _report(f: adopt.Findings, *, dry_run: bool, out: Callable[[str], None]) -> None:
    if f.mode is not None:
        out(f"already set up: this database runs in {f.mode} mode; nothing to adopt"
            + (" (`memoryctl migrate` brings it up to date)" if f.mode == "adopted" else ""))
        return
    out(f"bot schema version: {f.bot_schema_version or 'unknown (no schema_migrations ledger)'}"
        f" ({f.bot_migrations} migrations in its ledger)")
    out("rows per table:")
    for table, n in f.rows.items():
        out(f"  {table:<36} {n}")
    out("owners at or above a cap (they keep every row; saves are refused, or evict one row with decay on):")
    for line in f.at_cap or ["none"]:
        out(f"  {line}")
    out("settings it will read:")
    for source in f.sources:
        out(f"  {source.fact:<28} {source.read_from}")
    out("would add:" if dry_run else "added, in one transaction:")
    if f.missing:
        out("not a TomoriBot-shaped database: missing " + ", ".join(f.missing))
    for line in f.additions or ["nothing"]:
        out(f"  {line}")
    if dry_run:
        out("nothing was changed (dry run): run `memoryctl adopt` to apply")


def migrate_command(database_url: str) -> int:
    return asyncio.run(run_migrate(database_url))


def adopt_command(args: argparse.Namespace, database_url: str, limits: Limits) -> int:
    return asyncio.run(run_adopt(args, database_url, limits))
