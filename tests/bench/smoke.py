"""`make bench-smoke`: 2,000 creates over 200 workspaces through MemoryClient, end to end.

Starts its own embedded servers (durable settings, as `make run`) and a worker process in a
temporary directory, prints commands/s and latency percentiles, and stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nats

from tests.conftest import WorkerProcess, worker_env
from tests.support.commands import create_fields
from tests.support.directory import register_triggerer
from worker.client.memory_client import MemoryClient, new_create
from worker.local.embedded import NatsServer, PostgresServer


def _percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


async def _drive(nats_url: str, commands: int, workspaces: int, in_flight: int) -> tuple[float, list[float], dict]:
    nc = await nats.connect(nats_url)
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    sem = asyncio.Semaphore(in_flight)
    async with MemoryClient(nc, timeout=60) as client:
        async def one(i: int) -> None:
            ws = f"{10**17 + i % workspaces}"
            cmd = new_create(**create_fields(ws, f"fact number {i} about the server", lineage_id=1 + i % 3,
                                             bot_user_id="100000000000000001", channel={"id": "200000000000000001"}))
            async with sem:
                start = time.perf_counter()
                result = await client.create(cmd)
                latencies.append(time.perf_counter() - start)
            statuses[result.data.status] = statuses.get(result.data.status, 0) + 1

        # A short warm-up so connection set-up is not measured.
        await asyncio.gather(*(one(commands + i) for i in range(50)))
        latencies.clear()
        statuses.clear()
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(commands)))
        elapsed = time.perf_counter() - started
    await nc.close()
    return elapsed, latencies, statuses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--nats-sync", choices=("always", "default"), default="always",
                        help="JetStream fsync: before every acknowledgement (as `make run`), or nats-server's default")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    nats_server = NatsServer(root / "nats", sync_always=args.nats_sync == "always").start()
    pg = PostgresServer(root / "pg").start()
    worker = WorkerProcess(worker_env(nats_server.url, pg.dsn(), MEMORY_PARTITIONS=str(args.partitions)),
                           root / "worker.log")
    try:
        worker.start()  # it migrates the database
        asyncio.run(register_triggerer(pg.dsn()))
        elapsed, latencies, statuses = asyncio.run(
            _drive(nats_server.url, args.commands, args.workspaces, args.in_flight))
    finally:
        worker.stop()
        nats_server.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    lat = sorted(x * 1000 for x in latencies)
    print(f"bench-smoke on {os.cpu_count()} cores: {args.commands} creates over {args.workspaces} workspaces, "
          f"{args.in_flight} in flight")
    print(f"  throughput   {args.commands / elapsed:8.1f} commands/s ({elapsed:.2f} s)")
    print(f"  latency ms   p50 {_percentile(lat, 0.50):.1f}   p90 {_percentile(lat, 0.90):.1f}   "
          f"p99 {_percentile(lat, 0.99):.1f}   max {lat[-1]:.1f}   mean {statistics.fmean(lat):.1f}")
    print(f"  statuses     {statuses}")


if __name__ == "__main__":
    main()
