"""Fault fixtures: a FaultCluster (tests/faults/harness.py) per test, in network namespaces
of its own, torn down at the end also when the test fails.

    FAULT_SCHEDULES   comma-separated schedule names, or `all` (default: the short set)
    FAULT_HOLD_S      how long each fault is held (default 8; `make test-faults` uses 20)
    FAULT_TAIL_S      load after the heal (default 3)
    FAULT_RESULTS     a JSON-lines file each verdict is appended to
    FAULT_KEEP_DIR    keep the data directory (logs of nodes and workers) after the run
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

from tests.faults.harness import FaultCluster  # noqa: E402
from tests.faults.netns import available  # noqa: E402
from tests.faults.schedules import REPLICATION, WORKER_SETTINGS  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "faults: partitions, pauses, full disks in network namespaces (tests/faults)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def fault_cluster(request):
    why = available()
    if why:
        pytest.skip(f"fault harness unavailable: {why}")
    schedule = request.node.callspec.params.get("schedule", "")
    cluster = FaultCluster.create(WORKER_SETTINGS.get(schedule), REPLICATION.get(schedule))
    try:
        cluster.start()
        yield cluster
    finally:
        problems = cluster.stop()
        if os.environ.get("FAULT_KEEP_DIR"):
            print(f"\nfault run data kept in {cluster.root}")
        else:
            shutil.rmtree(cluster.root, ignore_errors=True)
        assert problems == [], f"teardown left: {problems}"
