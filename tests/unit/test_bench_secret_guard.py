"""`python -m tests.bench.secret_guard` (tests/bench/README.md, "The secret guard") runs and
reports every set, none of the bench's own creates refused."""

from tests.bench import secret_guard


def test_the_timing_runs_and_reports_each_set(capsys):
    assert secret_guard.main(["--rounds", "1", "--passes", "1"]) == 0
    out = capsys.readouterr().out
    for name in secret_guard.sets():
        assert name in out
    assert "make bench's creates                2000 texts,    0 refused" in out
