"""`make bench-lookups` stays working: a short run with servers of its own (tests/bench/lookups.py);
the figures themselves live in tests/bench/README.md."""

from __future__ import annotations

from tests.bench import lookups


def test_the_lookup_bench_reports_each_wait(capsys):
    report = lookups.main(["--garbage", "20", "--flood", "3", "--rounds", "1", "--no-write"])
    assert (report["garbage"], report["flood"], report["rounds"]) == (20, 3, 1)
    for name in ("b_plain_ms", "b_outcome_ms", "a_all_answered_ms"):
        assert set(report[name]) == {"median", "max"}
    assert "| B's plain lookup |" in capsys.readouterr().out
