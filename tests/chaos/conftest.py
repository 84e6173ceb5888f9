"""Chaos fixtures: NATS and PostgreSQL of our own, on fixed loopback ports in a temporary
directory, so that either can be stopped and started again on the same port with the same
data while a real worker (`memoryctl run`) keeps running, or is SIGKILLed and restarted.

Nothing here is shared with the rest of the suite: the servers are started per test and
stopped by PID at its end (also when it fails). Sizes come from the environment:

    CHAOS_COMMANDS  commands per run (default 600)
    CHAOS_KILLS     SIGKILLs of the worker in test_worker_kills (default 3)
    CHAOS_SEED      seed of every random choice (default 20240611)
    CHAOS_OUTAGE_SECONDS  how long PostgreSQL and NATS stay down (default 3)
    CHAOS_KEEP_DIR  set: keep the servers' data and the worker logs for a look afterwards

`pytest -s` shows each run's summary line (commands, kills, lost, duplicated, ...).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

from tests.conftest import WorkerProcess, worker_env  # noqa: E402
from worker.local.embedded import LOOPBACK, NatsServer, PostgresServer, free_port  # noqa: E402

CHAOS_DB = "chaos"




class ChaosWorker(WorkerProcess):
    """A `memoryctl run` child that counts how often it was started and killed."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        super().__init__(env, log_path)
        self.starts = 0
        self.kills = 0

    def start(self, timeout: float = 60.0) -> ChaosWorker:
        super().start(timeout)
        self.starts += 1
        return self

    def kill(self) -> None:
        """SIGKILL to our child's PID, as a crash or an OOM kill would do."""
        self.kills += self.running
        super().kill()


@dataclass
class ChaosServers:
    root: Path
    nats: NatsServer
    pg: PostgresServer

    @property
    def database_url(self) -> str:
        return self.pg.dsn(CHAOS_DB)

    def worker(self, name: str = "worker", **extra: str) -> ChaosWorker:
        settings = dict(MEMORY_PARTITIONS="16", MAX_SERVER_MEMORIES="20", MAX_PERSONAL_MEMORIES="20",
                        MAX_DELIVER="3", ACK_WAIT_SECONDS="20")
        settings.update(extra)
        return ChaosWorker(worker_env(self.nats.url, self.database_url, **settings), self.root / f"{name}.log")

    # Outages: the same port and data directory before and after, as an operator's restart.
    def stop_postgres(self) -> None:
        self.pg.stop()  # SIGINT: PostgreSQL's fast shutdown

    def start_postgres(self) -> None:
        self.pg.start()

    def stop_nats(self) -> None:
        self.nats.stop()  # SIGTERM

    def start_nats(self) -> None:
        self.nats.start()


@pytest.fixture
def chaos_servers():
    root = Path(tempfile.mkdtemp(prefix="memory-chaos-"))
    nats_server = NatsServer(root / "nats", port=free_port())
    pg = PostgresServer(root / "pg", port=free_port(), durable=False)
    started: list[NatsServer | PostgresServer] = []
    try:
        nats_server.start()
        started.append(nats_server)
        pg.start()
        started.append(pg)
        subprocess.run([str(pg.bin_dir / "createdb"), "-h", LOOPBACK, "-p", str(pg.port), "-U", pg.user, CHAOS_DB],
                       check=True, capture_output=True)
        yield ChaosServers(root, nats_server, pg)
    finally:
        for server in reversed(started):
            # stop() and kill() act on the PID these objects started, nothing else.
            server.stop()
            server.kill()
        if os.environ.get("CHAOS_KEEP_DIR"):
            print(f"\nchaos data kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def chaos_workers(chaos_servers):
    """Workers a test starts; whatever is still running at the end is stopped (by PID)."""
    workers: list[ChaosWorker] = []
    yield workers
    for w in workers:
        if w.running:
            w.stop(signal.SIGTERM, timeout=20)
            if w.running:
                w.kill()
