"""The worker end to end (load generation): a real `memoryctl run` process and a bot publishing through MemoryClient.

Closed loop (`closed_loop`): a fixed number of commands in flight, each replaced as soon as
its result arrives: the maximum rate. Open loop (`open_loop`): commands published on a fixed
schedule whatever the results do, latency counted from the scheduled time (so a stalled
worker cannot hide its backlog, no coordinated omission).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nats

from contracts.kinds.create import CreateMemory
from tests.conftest import WorkerProcess, worker_env
from worker.client.memory_client import MemoryClient
from worker.local.embedded import NatsServer


@dataclass
class LoadResult:
    commands: int
    elapsed_s: float
    latencies_s: list[float]
    statuses: dict[str, int]
    errors: dict[str, int] = field(default_factory=dict)
    target_rate: float | None = None
    latency_s_by_id: dict[str, float] = field(default_factory=dict)  # open loop only

    @property
    def rate(self) -> float:
        return len(self.latencies_s) / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _proc_status(pid: int) -> dict[str, str]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def _kb(value: str) -> int:
    return int(value.split()[0])


# Every started WorkerUnderTest until it is stopped: the harness stops leftovers on the way out.
LIVE: list[WorkerUnderTest] = []


class WorkerUnderTest:
    """A fresh nats-server (durable: sync_always, as `make run`, unless told otherwise) and a
    worker process on `database_url`."""

    def __init__(self, root: Path, database_url: str, *, nats_sync_always: bool = True, **env: str) -> None:
        self.root = root
        self.nats_sync_always = nats_sync_always
        self.database_url = database_url
        self.env = env
        self.nats: NatsServer | None = None
        self.worker: WorkerProcess | None = None

    def start(self) -> WorkerUnderTest:
        self.root.mkdir(parents=True, exist_ok=True)
        LIVE.append(self)
        self.nats = NatsServer(self.root / "nats", sync_always=self.nats_sync_always).start()
        self.worker = WorkerProcess(worker_env(self.nats.url, self.database_url, **self.env),
                                    self.root / "worker.log")
        self.worker.start()
        return self

    @property
    def pid(self) -> int:
        assert self.worker is not None and self.worker.proc is not None, "the worker is not started"
        return self.worker.proc.pid

    def memory(self) -> dict[str, float]:
        """Peak (VmHWM) and current (VmRSS) resident memory of the worker process, in MB."""
        status = _proc_status(self.pid)
        return {"peak_rss_mb": round(_kb(status["VmHWM"]) / 1024, 1),
                "rss_mb": round(_kb(status["VmRSS"]) / 1024, 1)}

    def stop(self) -> None:
        if self in LIVE:
            LIVE.remove(self)
        if self.worker is not None and self.worker.proc is not None and self.worker.proc.returncode is None:
            self.worker.stop()
        if self.nats is not None:
            self.nats.stop()


async def closed_loop(nats_url: str, commands: Sequence[CreateMemory], *, in_flight: int,
                      timeout: float) -> LoadResult:
    nc = await nats.connect(nats_url, max_reconnect_attempts=0)
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    work = iter(commands)
    try:
        async with MemoryClient(nc, timeout=min(timeout, 120.0)) as client:
            async def lane() -> None:
                for cmd in work:
                    started = time.perf_counter()
                    try:
                        result = await client.create(cmd)
                    except Exception as exc:  # counted and reported, never hidden
                        errors[type(exc).__name__] += 1
                        continue
                    latencies.append(time.perf_counter() - started)
                    statuses[result.data.status] += 1

            started = time.perf_counter()
            await asyncio.wait_for(asyncio.gather(*(lane() for _ in range(in_flight))), timeout)
            elapsed = time.perf_counter() - started
    finally:
        await nc.close()
    return LoadResult(len(commands), elapsed, latencies, dict(statuses), dict(errors))


async def open_loop(nats_url: str, commands: Sequence[CreateMemory], *, rate: float, timeout: float,
                    max_outstanding: int = 10_000) -> LoadResult:
    nc = await nats.connect(nats_url, max_reconnect_attempts=0)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    outstanding: set[asyncio.Task] = set()
    by_id: dict[str, float] = {}
    try:
        async with MemoryClient(nc, timeout=min(timeout, 120.0)) as client:
            async def one(cmd: CreateMemory, due: float) -> None:
                try:
                    result = await client.create(cmd)
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                    return
                latency = loop.time() - due
                by_id[cmd.command_id] = latency
                latencies.append(latency)
                statuses[result.data.status] += 1

            async def publish_all() -> None:
                start = loop.time() + 0.05
                for i, cmd in enumerate(commands):
                    due = start + i / rate
                    delay = due - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    while len(outstanding) >= max_outstanding:
                        await asyncio.wait(outstanding, return_when=asyncio.FIRST_COMPLETED)
                    task = asyncio.create_task(one(cmd, due))
                    outstanding.add(task)
                    task.add_done_callback(outstanding.discard)
                if outstanding:
                    await asyncio.wait(outstanding)

            started = time.perf_counter()
            await asyncio.wait_for(publish_all(), timeout)
            elapsed = time.perf_counter() - started
    finally:
        for task in list(outstanding):
            task.cancel()
        await nc.close()
    return LoadResult(len(commands), elapsed, latencies, dict(statuses), dict(errors), target_rate=rate,
                      latency_s_by_id=by_id)
