"""What the benches that start a worker of their own share: the servers and the worker (durable
settings, as `make run`), and where their results go."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, WorkerProcess, worker_env
from tests.support.directory import register_triggerer
from worker.local.embedded import NatsServer, PostgresServer

RESULTS = ROOT / "tests" / "bench" / "results"


@contextmanager
def own_worker(prefix: str, **env: str) -> Iterator[tuple[str, str]]:
    """Embedded NATS and PostgreSQL and a worker on them, stopped afterwards: (NATS URL, database URL)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    servers: list[Any] = []
    try:
        nats_server = NatsServer(root / "nats").start()
        servers.append(nats_server)
        pg = PostgresServer(root / "pg").start()
        servers.append(pg)
        worker = WorkerProcess(worker_env(nats_server.url, pg.dsn(), **env), root / "worker.log")
        worker.start()  # it migrates the database
        servers.insert(0, worker)
        asyncio.run(register_triggerer(pg.dsn()))
        yield nats_server.url, pg.dsn()
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def finish(report: dict[str, Any], name: str, load_before: tuple[float, float, float], *, write: bool) -> None:
    """Stamp the report with its time and the machine's load (other work moves the figures) and,
    unless `write` is false, keep it as tests/bench/results/<name>-<date>.json."""
    report["at"] = datetime.now(UTC).isoformat(timespec="seconds")
    report["load_average"] = {"start": load_before, "end": os.getloadavg(), "cores": os.cpu_count()}
    if write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{name}-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps(report, indent=2))
        print(f"wrote {path.relative_to(ROOT)}")
