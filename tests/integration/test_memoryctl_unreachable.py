"""A server memoryctl cannot reach is one line on stderr naming its URL, the password masked,
and exit 3, for the subcommands that do their work and end (and `run`, whose start-up ends it).
The sinks and the cache node are services that wait for NATS, saying so on each attempt."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from worker.local.embedded import LOOPBACK, free_port

SECRET = "s3cr3t-pw"
NATS_ONLY = [["dlq", "list"], ["commands", "list"], ["provision"]]
DATABASE_ONLY = [["user", "show", "1"], ["memories", "list", "--workspace", "1"], ["shadow", "report"], ["migrate"],
                 ["adopt", "--dry-run"], ["blacklist", "list", "1"]]
WORKER = [["demo"], ["run"]]  # the database first: NATS reachable, PostgreSQL not


def _memoryctl(argv: list[str], tmp_path, nats_url: str, database_url: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NATS_URL=nats_url, DATABASE_URL=database_url, MEMORY_DATA_DIR=str(tmp_path / "data"),
               METRICS_PORT="0", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", *argv], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv", NATS_ONLY + DATABASE_ONLY + WORKER, ids=" ".join)
def test_an_unreachable_server_is_one_line_naming_its_url_without_the_password(argv, tmp_path, nats_server):
    closed = free_port()  # bound, then released: nothing listens on it
    nats_down = argv in NATS_ONLY
    nats_url = f"nats://op:{SECRET}@{LOOPBACK}:{closed}" if nats_down else nats_server.url
    database_url = f"postgresql://op:{SECRET}@{LOOPBACK}:{closed}/memory"
    done = _memoryctl(argv, tmp_path, nats_url, database_url)
    server, shown = (("NATS", f"nats://op:***@{LOOPBACK}:{closed}") if nats_down
                     else ("PostgreSQL", f"postgresql://op:***@{LOOPBACK}:{closed}/memory"))
    assert done.returncode == 3, done
    assert done.stderr.splitlines()[-1].startswith(f"memoryctl {argv[0]}: cannot reach {server} at {shown}: "), done
    assert "Traceback" not in done.stdout + done.stderr, done
    assert SECRET not in done.stdout + done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("{")]  # JSON log lines
    assert len(said) == 1, done
