"""`make bench-clients` stays working: its comparison, short, on the e2e suite's worker (the
make target runs the same module with servers of its own, tests/bench/clients.py)."""

from __future__ import annotations

from tests.bench import clients


def test_the_client_bench_measures_both_clients_on_one_worker(e2e_worker, nats_server, capsys):
    report = clients.main(["--nats-url", nats_server.url, "--commands", "40", "--in-flight", "4", "--workspaces", "40",
                           "--rounds", "1", "--no-write"])
    for name in ("python", "typescript"):
        assert report[name]["statuses"] == [{"memory_saved_successfully": 40}], report[name]
        assert report[name]["creates_per_s"] > 0 and report[name]["p99_ms"] >= report[name]["p50_ms"] > 0
        assert report[name]["cpu_ms_per_create"] > 0
    assert set(report["ratios"]) == {"creates_per_s", "p50", "p99", "cpu_per_create"}
    out = capsys.readouterr().out
    assert "| TypeScript / Python |" in out and "40 creates a round, 4 in flight" in out
