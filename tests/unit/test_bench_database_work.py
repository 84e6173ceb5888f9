"""The arithmetic of the bench's database work per create and of its machine-per-process projection."""

from __future__ import annotations

import pytest

from tests.bench import report
from tests.bench.database_work import Function, Snapshot, Statement, TableWrites, delta, index_entries, per_command


def _snapshot(**kwargs) -> Snapshot:
    return Snapshot(**{"wal_insert_bytes": 0, **kwargs})


def test_delta_keeps_only_the_tables_statements_and_functions_that_moved():
    before = _snapshot(wal_insert_bytes=1_000, wal_records=10, wal_fpi=1, wal_bytes=900,
                       tables={"s.inbox": TableWrites(5, 1, 1, 0, 2), "s.idle": TableWrites(7, 0, 0, 0, 1)},
                       statements={(1, True): Statement("SELECT 1", True, 3, 1.5, 3, 0)},
                       functions={"s.save": Function(4, 2.0, 1.0)})
    after = _snapshot(wal_insert_bytes=5_000, wal_records=50, wal_fpi=3, wal_bytes=4_500,
                      tables={"s.inbox": TableWrites(9, 3, 2, 1, 2), "s.idle": TableWrites(7, 0, 0, 0, 1),
                              "s.new": TableWrites(2, 0, 0, 0, 3)},
                      statements={(1, True): Statement("SELECT 1", True, 5, 2.5, 5, 0),
                                  (2, False): Statement("INSERT", False, 2, 0.4, 2, 300),
                                  (3, True): Statement("SELECT 3", True, 1, 0.1, 1, 0)},
                      functions={"s.save": Function(6, 5.0, 2.5)})
    work = delta(before, after)
    assert (work.wal_insert_bytes, work.wal_records, work.wal_fpi, work.wal_bytes) == (4_000, 40, 2, 3_600)
    assert work.tables == {"s.inbox": TableWrites(4, 2, 1, 1, 2), "s.new": TableWrites(2, 0, 0, 0, 3)}
    assert work.statements == {(1, True): Statement("SELECT 1", True, 2, 1.0, 2, 0),
                               (2, False): Statement("INSERT", False, 2, 0.4, 2, 300),
                               (3, True): Statement("SELECT 3", True, 1, 0.1, 1, 0)}
    assert work.functions == {"s.save": Function(2, 3.0, 1.5)}


def test_delta_without_pg_stat_statements_has_no_statements():
    assert delta(_snapshot(), _snapshot(tables={"s.t": TableWrites(1)})).statements is None


def test_an_index_entry_per_index_for_each_insert_and_each_update_that_was_not_heap_only():
    assert index_entries(TableWrites(inserted=3, updated=4, hot_updated=1, deleted=5, indexes=2)) == 12
    assert index_entries(TableWrites(inserted=3, indexes=0)) == 0


def test_per_command_divides_every_figure_by_the_answered_commands():
    work = _snapshot(wal_insert_bytes=42_000, wal_records=300, wal_fpi=5, wal_bytes=40_000,
                     tables={"memory_worker.processed_commands": TableWrites(100, 0, 0, 0, 2),
                             "public.server_memories": TableWrites(80, 0, 0, 20, 3)},
                     statements={(1, True): Statement("SELECT save", True, 200, 50.0, 100, 30_000),
                                 (2, False): Statement("INSERT inbox", False, 100, 10.0, 100, 20_000)})
    out = per_command(work, 100, top=1)
    assert out["commands"] == 100
    assert (out["wal_bytes"], out["wal_records"], out["wal_fpi"], out["wal_insert_bytes"]) == (400.0, 3.0, 0.05, 420.0)
    assert out["rows_written"] == 2.0
    assert out["index_entries"] == 4.4  # 2 indexes x 1 insert + 3 indexes x 0.8 inserts
    assert out["tables"]["public.server_memories"] == {"inserted": 0.8, "updated": 0.0, "hot_updated": 0.0,
                                                       "deleted": 0.2, "indexes": 3, "index_entries": 2.4}
    assert (out["statements"], out["nested_statements"], out["statement_ms"]) == (2.0, 1.0, 0.5)
    assert out["top_statements"] == [{"calls": 2.0, "ms": 0.5, "rows": 1.0, "wal_bytes": 300.0, "toplevel": True,
                                      "query": "SELECT save"}]


def test_per_command_without_statements_or_functions_leaves_them_out():
    out = per_command(_snapshot(tables={"s.t": TableWrites(1, indexes=1)}), 0)
    assert "statements" not in out and "functions" not in out
    assert out["rows_written"] == 1.0  # no answered command: counted as one, never a division by zero


def test_projection_gives_each_process_its_own_machine_and_the_slowest_bounds_the_deployment():
    cpu = {"client_cpu_ms_per_command": 0.1, "worker_cpu_ms_per_command": 0.4, "nats_cpu_ms_per_command": 0.5,
           "postgres_cpu_ms_per_command": 0.8}
    out = report.projection(cpu, ("client", "worker", "nats", "postgres"), cores=2)
    rates = {name: p["commands_per_s"] for name, p in out["processes"].items()}
    # The bot and the worker run one Python event loop each: one core of the two.
    assert rates == {"client": 10_000.0, "worker": 2_500.0, "nats": 4_000.0, "postgres": 2_500.0}
    assert out["bound_commands_per_s"] == 2_500.0 and out["bottleneck"] in ("worker", "postgres")
    out = report.projection({**cpu, "postgres_cpu_ms_per_command": 1.0}, ("client", "worker", "nats", "postgres"))
    assert (out["bottleneck"], out["bound_commands_per_s"]) == ("postgres", 2_000.0)


def test_projection_of_a_process_not_measured_has_no_rate():
    out = report.projection({"client_cpu_ms_per_command": 0.2}, ("client", "postgres"), cores=4)
    assert out["processes"]["postgres"] == {"cpu_ms_per_command": None, "cores": 4, "commands_per_s": None}
    assert (out["bottleneck"], out["bound_commands_per_s"]) == ("client", 5_000.0)


def test_worker_over_peer_ratios():
    worker = {"cpu": {"postgres_cpu_ms_per_command": 0.6}, "database": {"wal_bytes": 3_000.0, "statements": 2.5}}
    peer = {"cpu": {"postgres_cpu_ms_per_command": 0.3}, "database": {"wal_bytes": 1_200.0, "statements": 0.0}}
    out = report.database_comparison(worker, peer)
    assert (out["postgres_cpu"], out["wal_bytes"]) == (2.0, 2.5)
    assert out["statements"] is None  # nothing to divide by
    assert report.database_comparison(worker, None)["wal_bytes"] is None


def test_the_targets_judge_the_figures_of_a_run_and_leave_out_none_it_lacks():
    results = {
        "ratios": {"worker_over_peer": 0.5, "worker_over_baseline": 0.49},
        "database_ratios": {"postgres_cpu": 1.0, "wal_bytes": 1.504},
        "worker": {"peak_rss_mb": 54.0, "cpu": {"worker_cpu_ms_per_command": 0.21}},
        "latency_under_load": {"p99_ms_at_12.5": 19.99, "p99_ms_at_25": 20.0},
    }
    met = {name: check["met"] for name, check in report.check_targets(results).items()}
    assert met == {
        "worker / peer throughput": True, "worker / baseline throughput": False,
        "p99 at 50% of max rate (ms)": None, "throughput large / small data": None,
        "worker peak RSS (MB)": True, "PostgreSQL CPU / peer's": True, "WAL bytes / peer's": False,
        "worker CPU per create (ms)": False, "p99 at 12.5% of max rate (ms)": True,
        "p99 at 25% of max rate (ms)": False,  # under 20 ms: 20 is not
    }


def test_the_database_ratios_keep_three_digits_for_the_targets():
    out = report.database_comparison({"database": {"wal_bytes": 3_008.0}}, {"database": {"wal_bytes": 2_000.0}})
    assert out["wal_bytes"] == 1.504


@pytest.mark.parametrize("peer_tables", [{}, {"public.server_memories": {"inserted": 0.7, "updated": 0.0,
                                                                          "deleted": 0.2, "indexes": 3}}])
def test_the_database_table_lists_whatever_tables_got_writes(peer_tables):
    worker = {"cpu": {"postgres_cpu_ms_per_command": 0.6},
              "database": {"wal_bytes": 3_000.0, "tables": {
                  "memory_worker.processed_commands": {"inserted": 1.0, "updated": 0.0, "deleted": 0.0, "indexes": 2},
                  "memory_worker.some_new_table": {"inserted": 2.0, "updated": 1.0, "deleted": 0.0, "indexes": 1}}}}
    peer = {"cpu": {"postgres_cpu_ms_per_command": 0.3}, "database": {"wal_bytes": 1_000.0, "tables": peer_tables}}
    text = "\n".join(report.database_table([("worker", worker), ("peer", peer), ("absent", None)],
                                           report.database_comparison(worker, peer)))
    assert "processed_commands (2)" in text and "some_new_table (1)" in text
    assert "2.00/1.00/0.00" in text
    assert ("server_memories (3)" in text) == bool(peer_tables)
    assert "absent" not in text
    wal = next(line for line in text.splitlines() if line.startswith("WAL bytes"))
    assert wal.split()[-3:] == ["3,000", "1,000", "3.00"]
