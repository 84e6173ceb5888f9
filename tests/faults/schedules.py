"""The fault schedules. Each injects its fault into a running system under load, holds it
for a bounded time, heals it (restarting whatever it killed) and returns; the runner
(tests/faults/runner.py) then measures how long the system took to serve again and hands
the history to the checker. Holding a fault for N seconds is the fault's duration, not a
wait for something to happen: every wait for a condition is bounded and polled.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats

from tests.faults.harness import ACK_WAIT_S, NODES, FaultCluster

PIN_TIMEOUT_S = 10  # worker/streams.py PIN_TIMEOUT_S: the pin moves after this long without pulls


@dataclass
class Run:
    cluster: FaultCluster
    admin: nats.NATS
    hold_s: float
    injected: list[str] = field(default_factory=list)
    healed_at: float | None = None

    def note(self, text: str) -> None:
        self.injected.append(text)

    def healed(self) -> None:
        self.healed_at = time.monotonic()

    async def leader(self, stream: str = "MEMORY_COMMANDS", timeout_s: float = 30.0) -> str:
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            try:
                cluster = (await self.admin.jetstream().stream_info(stream)).cluster
                if cluster and cluster.leader:
                    return cluster.leader
                last = cluster
            except Exception as exc:  # an election going on
                last = exc
            await asyncio.sleep(0.2)
        raise AssertionError(f"{stream} has no leader: {last!r}")

    async def hold(self, seconds: float | None = None) -> None:
        await asyncio.sleep(self.hold_s if seconds is None else seconds)

    async def on_host(self, host: str, fn: Callable, *args) -> object:
        return await asyncio.to_thread(self.cluster.net.run_on, host, fn, *args)


Schedule = Callable[[Run], Awaitable[None]]


def others(node: str) -> list[str]:
    return [n for n in NODES if n != node]


async def partition_leader_minority(run: Run) -> None:
    leader = await run.leader()
    run.cluster.net.partition([leader], others(leader))
    run.note(f"{leader} (MEMORY_COMMANDS leader) cut from {others(leader)} for {run.hold_s:.0f}s")
    await run.hold()
    run.cluster.net.heal()
    run.healed()


async def partition_bridge(run: Run) -> None:
    leader = await run.leader()
    a, bridge = others(leader)
    run.cluster.net.partition([leader], [a])
    run.note(f"{leader} (leader) cut from {a}; {bridge} reaches both, for {run.hold_s:.0f}s")
    await run.hold()
    run.cluster.net.heal()
    run.healed()


async def partition_leader_with_worker(run: Run) -> None:
    leader = await run.leader()
    run.cluster.net.partition([leader, "worker-1"], [*others(leader), "worker-2"])
    run.note(f"{leader} (leader) and worker-1 cut from {others(leader)} and worker-2 for {run.hold_s:.0f}s"
             " (PostgreSQL and the bot reach everyone)")
    await run.hold()
    run.cluster.net.heal()
    run.healed()


async def pause_worker(run: Run) -> None:
    pause = ACK_WAIT_S + PIN_TIMEOUT_S + 5
    run.cluster.pause("worker-1")
    run.note(f"worker-1 SIGSTOPped {pause}s (ACK_WAIT_SECONDS={ACK_WAIT_S}, pin timeout {PIN_TIMEOUT_S}s), "
             "then SIGCONT with its commands in hand")
    await run.hold(pause)
    run.cluster.resume("worker-1")
    run.healed()


async def pause_nats_leader(run: Run) -> None:
    leader = await run.leader()
    run.cluster.pause(leader)
    run.note(f"{leader} (leader) SIGSTOPped {run.hold_s:.0f}s, then SIGCONT")
    await run.hold()
    run.cluster.resume(leader)
    run.healed()


async def pause_postgres(run: Run) -> None:
    run.cluster.pause("pg")
    run.note(f"PostgreSQL (postmaster and backends) SIGSTOPped {run.hold_s:.0f}s, then SIGCONT")
    await run.hold()
    run.cluster.resume("pg")
    run.healed()


async def kill_leader_in_partition(run: Run) -> None:
    leader = await run.leader()
    run.cluster.net.partition([leader], others(leader))
    await run.hold(run.hold_s / 2)
    run.cluster.kill(leader)
    run.note(f"{leader} (leader) cut from {others(leader)}, SIGKILLed {run.hold_s / 2:.0f}s later, "
             f"healed and restarted after {run.hold_s / 2:.0f}s more")
    await run.hold(run.hold_s / 2)
    run.cluster.net.heal()
    await asyncio.to_thread(run.cluster.start_node, leader)
    run.healed()


async def full_disk_leader(run: Run) -> None:
    leader = await run.leader()
    filler = await asyncio.to_thread(run.cluster.fill_store, leader)
    run.note(f"{leader} (leader)'s store filled to the last byte for {run.hold_s:.0f}s, then freed")
    await run.hold()
    os.unlink(filler)
    run.healed()


async def truncate_minority(run: Run) -> None:
    leader = await run.leader()
    victim = others(leader)[0]
    run.cluster.kill(victim)
    cut = []
    for stream in ("MEMORY_COMMANDS", "MEMORY_EVENTS"):
        for blk in run.cluster.stream_files(victim, stream):
            size = blk.stat().st_size
            os.truncate(blk, size // 2)
            cut.append(f"{stream}/{blk.name} {size}->{size // 2}")
    run.note(f"{victim} (follower) SIGKILLed, its stream files truncated to half ({'; '.join(cut) or 'none'}), "
             f"restarted after {run.hold_s:.0f}s")
    await run.hold()
    await asyncio.to_thread(run.cluster.start_node, victim)
    run.healed()


SCHEDULES: dict[str, Schedule] = {
    "partition-leader-minority": partition_leader_minority,
    "partition-bridge": partition_bridge,
    "partition-leader-with-worker": partition_leader_with_worker,
    "pause-worker": pause_worker,
    "pause-nats-leader": pause_nats_leader,
    "pause-postgres": pause_postgres,
    "kill-leader-in-partition": kill_leader_in_partition,
    "full-disk-leader": full_disk_leader,
    "truncate-minority": truncate_minority,
}
# `make test`: what needs no extra package and stays short on two cores.
SHORT = ("partition-leader-minority",)
