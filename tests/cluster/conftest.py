"""Cluster fixtures: a three-node JetStream cluster from deploy/nats/ (accounts included),
PostgreSQL, and workers logged in as `memory-worker`, all on loopback in a temporary directory
and all stopped by PID at the end (also when the test fails).

Sizes come from the environment:

    CLUSTER_COMMANDS  creates per run (default 300; `make test-cluster` runs 3000)
    CLUSTER_SEED      seed of every random choice (default 20240611)
    CLUSTER_KEEP_DIR  keep the data directory (logs of the nodes and workers) after the run
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

from db.migrate import migrate_dsn  # noqa: E402
from tests.cluster.nats_deploy import PASSWORDS, NatsCluster  # noqa: E402
from tests.conftest import WorkerProcess, worker_env  # noqa: E402
from tests.support.directory import register_triggerer  # noqa: E402
from worker.local.embedded import PostgresServer  # noqa: E402

CLUSTER_DB = "cluster"




@dataclass
class ClusterSetup:
    root: Path
    nats: NatsCluster
    pg: PostgresServer
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return self.pg.dsn(CLUSTER_DB)

    def worker(self, name: str, **extra: str) -> WorkerProcess:
        settings = dict(
            NATS_USER="memory-worker", NATS_PASSWORD=PASSWORDS["memory-worker"],
            STREAM_REPLICAS="3", MEMORY_PARTITIONS="16", ACK_WAIT_SECONDS="20", MAX_DELIVER="10",
            MAX_SERVER_MEMORIES="1000000", MAX_PERSONAL_MEMORIES="1000000",
            REPLY_SUBJECT_PREFIXES="_INBOX.bot.",
        )
        settings.update(extra)
        worker = WorkerProcess(worker_env(self.nats.url, self.database_url, **settings), self.root / f"{name}.log")
        self.workers.append(worker)
        return worker


@pytest.fixture
async def cluster_setup():
    root = Path(tempfile.mkdtemp(prefix="memory-cluster-"))
    nats_cluster = NatsCluster(root / "nats")
    pg = PostgresServer(root / "pg", durable=False)
    setup = ClusterSetup(root, nats_cluster, pg)
    try:
        nats_cluster.start()
        pg.start()
        conn = await asyncpg.connect(pg.dsn())
        try:
            await conn.execute(f"CREATE DATABASE {CLUSTER_DB}")
        finally:
            await conn.close()
        await migrate_dsn(setup.database_url)  # as the owner; the workers find nothing to do
        await register_triggerer(setup.database_url)
        yield setup
    finally:
        for worker in setup.workers:
            if worker.running:
                worker.stop(signal.SIGTERM, timeout=20)
                worker.kill()
        nats_cluster.stop()
        pg.stop()
        pg.kill()
        if os.environ.get("CLUSTER_KEEP_DIR"):
            print(f"\ncluster data kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
