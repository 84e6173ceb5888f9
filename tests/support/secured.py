"""A worker behind the published per-role permissions: one NATS node running
deploy/nats/single.conf with accounts.conf, the worker logged in as `memory-worker`."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.nats_deploy import PASSWORDS, single_node
from tests.conftest import WorkerProcess, worker_env


@dataclass(frozen=True)
class Secured:
    url: str
    worker: WorkerProcess


@contextlib.asynccontextmanager
async def secured_worker(node_dir: Path, log_path: Path, database_url: str, **env: str):
    """The node and the worker on it, both stopped on the way out; `env` adds worker settings."""
    node = single_node(node_dir)
    worker = None
    try:
        worker = WorkerProcess(worker_env(node.url, database_url, NATS_USER="memory-worker",
                                          NATS_PASSWORD=PASSWORDS["memory-worker"], **env), log_path)
        await asyncio.to_thread(worker.start)
        yield Secured(node.url, worker)
    finally:
        if worker is not None:
            await asyncio.to_thread(worker.stop)
        node.stop()
        node.kill()
