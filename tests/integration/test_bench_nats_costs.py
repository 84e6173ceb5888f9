"""`make bench-nats` runs: a short round on its own nats-server reports every operation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_nats_cost_probe_reports_every_operation():
    done = subprocess.run([sys.executable, "-m", "tests.bench.nats_costs", "--messages", "200", "--rounds", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    for operation in ("command publish, one by one", "delivery and ack, limits", "purge of what was acknowledged",
                      "delivery and ack, work queue (before)", "delivery and ack, limits, AckPolicy.ALL",
                      "events, atomic batches", "reply (core publish)"):
        assert operation in done.stdout, (operation, done.stdout)
