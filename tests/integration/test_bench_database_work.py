"""The bench's database work per create, read from a real PostgreSQL started as `make bench` starts it."""

from __future__ import annotations

import asyncpg
import pytest

from tests.bench.database_work import PG_SETTINGS, Meter
from tests.conftest import unique
from worker.local.embedded import PostgresServer


@pytest.fixture(scope="module")
def bench_pg(tmp_root):
    server = PostgresServer(tmp_root / f"pg-{unique()}", durable=False, settings=PG_SETTINGS).start()
    yield server
    server.stop()


async def _database(pg: PostgresServer) -> str:
    name = f"work_{unique()}".replace("-", "_")
    conn = await asyncpg.connect(pg.dsn())
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    dsn = pg.dsn(name)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text NOT NULL, n int NOT NULL);"
                           " CREATE INDEX notes_body ON public.notes (body)")
    finally:
        await conn.close()
    return dsn


async def test_the_meter_counts_the_rows_wal_and_statements_of_the_phase_on_its_database(bench_pg):
    dsn = await _database(bench_pg)
    meter = await Meter.start(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        for i in range(10):
            await conn.execute("INSERT INTO public.notes VALUES ($1, $2, 0)", i, f"note {i}")
        await conn.execute("UPDATE public.notes SET n = 1 WHERE id < 4")  # no indexed column: heap-only
        await conn.execute("UPDATE public.notes SET body = body || '!' WHERE id = 9")
        await conn.execute("DELETE FROM public.notes WHERE id >= 8")
        # This connection stays open and idle, holding the counters of its last statements
        # (handed over at most once a second): the meter has to wait for them.
        figures = await meter.finish(10)
    finally:
        await conn.close()
    assert figures["settled"] is True
    notes = figures["tables"]["public.notes"]
    assert (notes["inserted"], notes["updated"], notes["deleted"], notes["indexes"]) == (1.0, 0.5, 0.2, 2)
    assert notes["hot_updated"] <= 0.4
    assert notes["index_entries"] == 2 * (1.0 + 0.5 - notes["hot_updated"])
    assert list(figures["tables"]) == ["public.notes"]  # the meter's own reads write nothing
    assert figures["rows_written"] == 1.7
    assert figures["wal_bytes"] > 0 and figures["wal_records"] > 0 and figures["wal_insert_bytes"] > 0
    # Sent statements only (`make bench` does not count those inside functions); the meter's
    # own reads of the statistics views are not among them.
    assert figures["statements"] == 1.3
    assert figures["nested_statements"] == 0
    queries = [s["query"] for s in figures["top_statements"]]
    assert any(q.startswith("INSERT INTO public.notes") for q in queries)
    assert not any("pg_stat" in q for q in queries)


async def test_the_meter_leaves_out_other_databases(bench_pg):
    measured, other = await _database(bench_pg), await _database(bench_pg)
    meter = await Meter.start(measured)
    conn = await asyncpg.connect(other)
    try:
        await conn.execute("INSERT INTO public.notes SELECT g, 'x' || g, 0 FROM generate_series(1, 50) g")
    finally:
        await conn.close()
    figures = await meter.finish(1)
    assert figures["tables"] == {}
    assert figures["statements"] == 0
