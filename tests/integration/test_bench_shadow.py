"""`make bench-shadow` stays working: its two measurements, short, with servers of its own
(tests/bench/shadow.py); the figures themselves live in tests/bench/README.md."""

from __future__ import annotations

from tests.bench import shadow


def test_the_shadow_bench_measures_wal_and_the_added_latency(capsys):
    report = shadow.main(["--count", "8", "--calls", "8", "--timeout", "30", "--no-write"])
    wal = report["wal_bytes_per_command"]
    assert set(wal) == {"real create", "dry run of a create (with its shadow record)",
                        "the shadow record alone (the same INSERT)", "a report, paired (its UPDATE)"}
    assert all(value > 0 for value in wal.values()), wal
    latency = report["latency"]
    assert latency["calls"] == 8 and latency["timed_out"] == 0  # a timeout no dry run reaches on any machine
    assert set(latency["shadowed_ms"]) == set(latency["own_write_ms"]) == set(latency["added_ms"]) == {"p50", "p99"}
    out = capsys.readouterr().out
    assert "| added by shadow mode |" in out and "| real create |" in out
