"""Real servers for the suite: one nats-server and one PostgreSQL per test session, on free
loopback ports in temporary directories, stopped by PID at the end. Each database test gets
a fresh database cloned from a migrated template (cheap, and no test sees another's rows).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import BinaryIO

import asyncpg
import nats
import pytest

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

from db.migrate import migrate_dsn  # noqa: E402
from db.pool import create_pool  # noqa: E402
from tests.support.directory import register_triggerer  # noqa: E402
from worker.local.embedded import NatsServer, PostgresServer, free_port  # noqa: E402
from worker.local.processes import ChildProcess  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_DB = "memory_template"
_db_counter = itertools.count()
LAYERS = ("unit", "integration", "e2e", "chaos", "cluster", "faults")


def pytest_collection_modifyitems(items):
    """Each test carries its layer's marker, from the folder it lives in."""
    tests = Path(__file__).resolve().parent
    for item in items:
        relative = Path(str(item.path)).resolve().relative_to(tests)
        if relative.parts and relative.parts[0] in LAYERS:
            item.add_marker(relative.parts[0])


@pytest.fixture(scope="session")
def tmp_root():
    path = Path(tempfile.mkdtemp(prefix="memory-tests-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def nats_server(tmp_root):
    server = NatsServer(tmp_root / "nats").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_server(tmp_root):
    server = PostgresServer(tmp_root / "pg", durable=False).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def template_db(pg_server):
    conn = await asyncpg.connect(pg_server.dsn())
    await conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    await conn.close()
    await migrate_dsn(pg_server.dsn(TEMPLATE_DB))
    # Every clone knows the person who triggers the tests' commands (the bot registers a
    # person before the model can act on their message).
    await register_triggerer(pg_server.dsn(TEMPLATE_DB))
    return TEMPLATE_DB


async def clone_database(pg_server: PostgresServer, template: str) -> str:
    name = f"t_{os.getpid()}_{next(_db_counter)}"
    conn = await asyncpg.connect(pg_server.dsn())
    try:
        await conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    finally:
        await conn.close()
    return pg_server.dsn(name)


@pytest.fixture
async def database_url(pg_server, template_db):
    return await clone_database(pg_server, template_db)


@pytest.fixture
async def pool(database_url):
    p = await create_pool(database_url, min_size=1, max_size=20)
    yield p
    await p.close()


@pytest.fixture
async def nc(nats_server):
    client = await nats.connect(nats_server.url)
    yield client
    await client.drain()


def unique(prefix: str = "") -> str:
    """An id no other test uses: keeps tests on shared servers out of each other's way."""
    return f"{prefix}{uuid.uuid4().int % 10**18:018d}"


class WorkerProcess(ChildProcess):
    """`memoryctl run` as a real child process, pointed at the test servers; stop() and
    kill() act on its PID only, and it can be started again after either."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self._log: BinaryIO | None = None
        self.metrics_url: str | None = None  # set where the worker serves metrics

    def start(self, timeout: float = 60.0) -> WorkerProcess:
        self._log = open(self.log_path, "ab")
        start_offset = self.log_path.stat().st_size
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker.cli.memoryctl", "run"], env=self.env, cwd=ROOT,
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start_offset)
                if b"worker_ready" in f.read():
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()[-4000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"worker not ready:\n{self.log_path.read_text()[-4000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        self.terminate(sig, timeout)
        self._close_log()
        return self.proc.returncode if self.proc else None

    def kill(self) -> None:
        super().kill()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def worker_env(nats_url: str, database_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # No metrics endpoint unless a test asks for one: several workers share this machine.
    env.update(NATS_URL=nats_url, DATABASE_URL=database_url, LOG_FORMAT="json", PYTHONPATH=str(ROOT),
               METRICS_PORT="0")
    env.update(extra)
    return env


@pytest.fixture(scope="session")
async def e2e_database_url(pg_server, template_db):
    return await clone_database(pg_server, template_db)


@pytest.fixture(scope="session")
async def e2e_worker(nats_server, e2e_database_url, tmp_root):
    """One worker for the e2e suite: tests keep apart by using their own workspace ids."""
    metrics_port = free_port()
    worker = WorkerProcess(
        worker_env(nats_server.url, e2e_database_url, MAX_SERVER_MEMORIES="5", MAX_PERSONAL_MEMORIES="5",
                   MEMORY_PARTITIONS="4", MAX_DELIVER="3", METRICS_PORT=str(metrics_port)),
        tmp_root / "e2e-worker.log",
    )
    worker.metrics_url = f"http://127.0.0.1:{metrics_port}"
    await asyncio.to_thread(worker.start)
    yield worker
    await asyncio.to_thread(worker.stop)
