"""What PostgreSQL did for a measured phase: WAL, rows written per table, statements, functions.

A snapshot of the cumulative counters is taken before and after the phase, on the phase's
database, and the difference is divided by the answered commands. tests/bench/README.md
("Database work per create") says what each figure means.

PostgreSQL's backends hand their table, function and WAL counters to the shared statistics
at most once a second while busy, and an idle backend with counters still pending hands them
over 10 s later (PGSTAT_MIN_INTERVAL and PGSTAT_IDLE_INTERVAL in pgstat.c). So before each
snapshot `settle()` waits, with a bound, until every other client backend has either gone
(a backend hands everything over when it exits), gone idle again more than a second after
the phase ended, or been idle for longer than that 10 s. pg_stat_statements and the WAL
insert position are exact at any moment.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg

# `make bench` and `make bench-profile` start their PostgreSQL with these. Top-level
# statements only in `make bench`: counting each statement inside the save functions as
# well costs the run more than it tells at the maximum rate.
PG_SETTINGS = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "top"}
PROFILE_PG_SETTINGS = {**PG_SETTINGS, "pg_stat_statements.track": "all", "track_functions": "all"}

# A backend with pending counters that went idle this long ago has handed them over.
IDLE_FLUSH = timedelta(seconds=10.5)
# A backend that went idle this long after a moment has handed over what it had at that moment.
BUSY_FLUSH = timedelta(seconds=1.1)
# Every statement of this module names one of the statistics views, and statements that do
# are left out of the counts (the worker and the peer never read them).
_OWN = "%pg\\_stat%"


@dataclass(frozen=True, slots=True)
class TableWrites:
    inserted: int = 0
    updated: int = 0
    hot_updated: int = 0  # updates that wrote no index entry (heap-only tuples)
    deleted: int = 0
    indexes: int = 0


@dataclass(frozen=True, slots=True)
class Statement:
    query: str
    toplevel: bool
    calls: int = 0
    ms: float = 0.0
    rows: int = 0
    wal_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Function:
    calls: int = 0
    total_ms: float = 0.0
    self_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    wal_insert_bytes: int  # the WAL insert position: every byte of WAL the cluster wrote
    wal_records: int = 0
    wal_fpi: int = 0
    wal_bytes: int = 0
    tables: dict[str, TableWrites] = field(default_factory=dict)
    # None when pg_stat_statements is not loaded (shared_preload_libraries).
    statements: dict[tuple[int, bool], Statement] | None = None
    functions: dict[str, Function] = field(default_factory=dict)


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    """What happened between two snapshots; only tables, statements and functions that moved."""
    tables = {}
    for name, end in after.tables.items():
        start = before.tables.get(name, TableWrites())
        moved = TableWrites(end.inserted - start.inserted, end.updated - start.updated,
                            end.hot_updated - start.hot_updated, end.deleted - start.deleted, end.indexes)
        if moved.inserted or moved.updated or moved.deleted:
            tables[name] = moved
    statements = None
    if after.statements is not None:
        statements = {}
        for key, end in after.statements.items():
            start = (before.statements or {}).get(key, Statement(end.query, end.toplevel))
            if end.calls > start.calls:
                statements[key] = Statement(end.query, end.toplevel, end.calls - start.calls, end.ms - start.ms,
                                            end.rows - start.rows, end.wal_bytes - start.wal_bytes)
    functions = {}
    for name, end in after.functions.items():
        start = before.functions.get(name, Function())
        if end.calls > start.calls:
            functions[name] = Function(end.calls - start.calls, end.total_ms - start.total_ms,
                                       end.self_ms - start.self_ms)
    return Snapshot(after.wal_insert_bytes - before.wal_insert_bytes, after.wal_records - before.wal_records,
                    after.wal_fpi - before.wal_fpi, after.wal_bytes - before.wal_bytes, tables, statements, functions)


def index_entries(writes: TableWrites) -> int:
    """Index entries the writes added: one per index for an inserted row and for an update that
    was not heap-only (a partial index that the row does not match gets none, so this is an
    upper bound); a delete adds none (vacuum removes the entries later)."""
    return writes.indexes * (writes.inserted + writes.updated - writes.hot_updated)


def per_command(work: Snapshot, commands: int, *, top: int = 10) -> dict:
    """The figures of the results JSON: `work` divided by the answered commands."""
    n = max(1, commands)

    def each(value: float, digits: int = 3) -> float:
        return round(value / n, digits)

    tables = {name: {"inserted": each(w.inserted), "updated": each(w.updated), "hot_updated": each(w.hot_updated),
                     "deleted": each(w.deleted), "indexes": w.indexes, "index_entries": each(index_entries(w))}
              for name, w in sorted(work.tables.items())}
    out: dict = {
        "commands": commands,
        "wal_bytes": each(work.wal_bytes, 1), "wal_records": each(work.wal_records, 2),
        "wal_fpi": each(work.wal_fpi), "wal_insert_bytes": each(work.wal_insert_bytes, 1),
        "rows_written": each(sum(w.inserted + w.updated + w.deleted for w in work.tables.values())),
        "index_entries": each(sum(index_entries(w) for w in work.tables.values())),
        "tables": tables,
    }
    if work.statements is not None:
        listed = sorted(work.statements.values(), key=lambda s: s.ms, reverse=True)
        out["statements"] = each(sum(s.calls for s in listed if s.toplevel), 2)
        out["nested_statements"] = each(sum(s.calls for s in listed if not s.toplevel), 2)
        out["statement_ms"] = each(sum(s.ms for s in listed if s.toplevel))
        out["top_statements"] = [{"calls": each(s.calls), "ms": each(s.ms, 4), "rows": each(s.rows),
                                  "wal_bytes": each(s.wal_bytes, 1), "toplevel": s.toplevel, "query": s.query}
                                 for s in listed[:top]]
    if work.functions:
        out["functions"] = [{"name": name, "calls": each(f.calls), "self_ms": each(f.self_ms, 4),
                             "total_ms": each(f.total_ms, 4)}
                            for name, f in sorted(work.functions.items(), key=lambda kv: kv[1].self_ms,
                                                  reverse=True)[:top]]
    return out


_TABLES = """
SELECT t.schemaname || '.' || t.relname AS name, t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd, t.n_tup_del,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid) AS indexes
FROM pg_stat_user_tables t"""
_STATEMENTS = """
SELECT queryid, toplevel, min(left(regexp_replace(query, '\\s+', ' ', 'g'), 160)) AS query, sum(calls) AS calls,
       sum(total_exec_time) AS ms, sum(rows) AS rows, sum(wal_bytes) AS wal_bytes
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE $1
GROUP BY queryid, toplevel"""


async def snapshot(conn: asyncpg.Connection) -> Snapshot:
    wal = await conn.fetchrow("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS position,"
                              " wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal")
    tables = {r["name"]: TableWrites(r["n_tup_ins"], r["n_tup_upd"], r["n_tup_hot_upd"], r["n_tup_del"], r["indexes"])
              for r in await conn.fetch(_TABLES)}
    functions = {r["funcname"]: Function(r["calls"], r["total_time"], r["self_time"]) for r in await conn.fetch(
        "SELECT schemaname || '.' || funcname AS funcname, calls, total_time, self_time FROM pg_stat_user_functions"
        " WHERE funcname NOT ILIKE $1", _OWN)}
    statements = None
    try:
        # The view's functions come with the extension, in each database that reads them.
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")
        statements = {(r["queryid"], r["toplevel"]): Statement(r["query"], r["toplevel"], int(r["calls"]),
                                                               float(r["ms"]), int(r["rows"]), int(r["wal_bytes"]))
                      for r in await conn.fetch(_STATEMENTS, _OWN)}
    except asyncpg.PostgresError:
        pass  # not in shared_preload_libraries: the other figures stand without it
    return Snapshot(wal["position"], wal["wal_records"], wal["wal_fpi"], wal["wal_bytes"], tables, statements, functions)


async def settle(conn: asyncpg.Connection, since: datetime, timeout: float = 30.0) -> bool:
    """Wait until every other client backend has handed over its counters as of `since` (see
    the module's docstring); False if some had not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        pending = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            " AND NOT (state = 'idle' AND (state_change >= $1 OR clock_timestamp() - state_change >= $2))",
            since + BUSY_FLUSH, IDLE_FLUSH)
        if not pending:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.25)


@dataclass
class Meter:
    """`await Meter.start(dsn)` before a phase, `await meter.finish(answered)` after it."""

    conn: asyncpg.Connection
    before: Snapshot
    settled: bool

    @classmethod
    async def start(cls, dsn: str) -> Meter:
        conn = await asyncpg.connect(dsn)
        try:
            settled = await settle(conn, datetime.now(UTC))
            return cls(conn, await snapshot(conn), settled)
        except BaseException:
            await conn.close()
            raise

    async def finish(self, commands: int, *, top: int = 10) -> dict:
        try:
            settled = await settle(self.conn, datetime.now(UTC))
            after = await snapshot(self.conn)
        finally:
            await self.conn.close()
        out = per_command(delta(self.before, after), commands, top=top)
        out["settled"] = self.settled and settled
        return out

    async def close(self) -> None:
        await self.conn.close()
