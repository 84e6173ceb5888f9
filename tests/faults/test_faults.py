"""Jepsen-style faults against the whole system (issue 18): three NATS nodes, PostgreSQL,
two workers and a bot, each on a network namespace of its own; a schedule partitions,
pauses, kills or fills a disk while the bot keeps publishing creates; the checker
(tests/faults/checker.py, independent of the worker's code) then reads the bot's history,
PostgreSQL and the whole MEMORY_EVENTS stream.

The guarantee under test: everything JetStream acknowledged is applied exactly once, in
each workspace's publish order, under the cap, with its events once each after the commit
and every command acknowledged (its events stored); and the system serves again after the heal.

    make test-faults          every schedule, faults held 20 s
    FAULT_SCHEDULES=pause-worker,full-disk-leader pytest -s tests/faults
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest

from tests.faults.runner import run_schedule
from tests.faults.sabotage import BREAKS, sabotage_and_check
from tests.faults.schedules import CONTROLS, SCHEDULES, SHORT

# A worker's clean stop after a run: its commands in hand finish or go back, the pool closes.
STOP_BOUND_S = 30


def _chosen() -> list[str]:
    raw = os.environ.get("FAULT_SCHEDULES", "").strip()
    if not raw:
        return list(SHORT)
    if raw == "all":
        return list(SCHEDULES)
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCHEDULES]
    if unknown:
        raise pytest.UsageError(f"FAULT_SCHEDULES: unknown schedule(s) {unknown}; known: {sorted(SCHEDULES)}")
    return names


@pytest.mark.parametrize("schedule", _chosen())
def test_fault_schedule_keeps_every_guarantee(fault_cluster, schedule):
    hold_s = float(os.environ.get("FAULT_HOLD_S", "8"))
    tail_s = float(os.environ.get("FAULT_TAIL_S", "3"))
    started = time.monotonic()
    verdict, bot = fault_cluster.net.run_on("bot", asyncio.run, run_schedule(fault_cluster, schedule,
                                                                             hold_s=hold_s, tail_s=tail_s))
    print(f"\n{verdict.line()} elapsed={time.monotonic() - started:.0f}s")
    if path := os.environ.get("FAULT_RESULTS"):
        with open(path, "a") as out:
            out.write(json.dumps(verdict.record()) + "\n")
    # Every worker rode the fault out (no restart: the harness restarts none) and stops cleanly.
    assert [w for w, p in fault_cluster.workers.items() if not p.running] == [], "a worker exited during the run"
    codes = {w: fault_cluster.net.run_on(w, p.stop, signal.SIGTERM, STOP_BOUND_S)
             for w, p in fault_cluster.workers.items()}
    assert codes == {w: 0 for w in codes}, f"exit codes after SIGTERM (-9: killed after {STOP_BOUND_S}s): {codes}"
    if schedule in CONTROLS:  # the guarantee does not hold here, and the checker must say so
        assert verdict.lost > 0, f"the negative control lost nothing: the checker or the schedule is blind\n{verdict.line()}"
        return
    assert verdict.problems == [], "\n".join(verdict.problems)
    assert verdict.acked > 0 and verdict.saved > 0 and verdict.refused > 0, verdict.line()
    if schedule == SHORT[0]:  # the checker itself: known breaks are found, and nothing else
        broken = fault_cluster.net.run_on("bot", asyncio.run, sabotage_and_check(fault_cluster, bot, schedule))
        assert {k: v for k, v in broken.counts.items() if v} == BREAKS, broken.problems
