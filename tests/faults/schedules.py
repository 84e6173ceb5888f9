"""The fault schedules. Each injects its fault into a running system under load, holds it
for a bounded time, heals it (restarting whatever it killed) and returns; the runner
(tests/faults/runner.py) then measures how long the system took to serve again and hands
the history to the checker. Holding a fault for N seconds is the fault's duration, not a
wait for something to happen: every wait for a condition is bounded and polled.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats

from tests.faults.harness import ACK_WAIT_S, NODES, WORKERS, FaultCluster

PIN_TIMEOUT_S = 10  # worker/consuming/administration/streams.py PIN_TIMEOUT_S: the pin moves after this long without pulls


@dataclass
class Run:
    cluster: FaultCluster
    admin: nats.NATS
    hold_s: float
    injected: list[str] = field(default_factory=list)
    healed_at: float | None = None
    # The bot's probe for service (Bot.probe): a schedule that goes on after its heal (a
    # failover rejoining the old primary) probes right at the heal, and the runner uses that.
    probe: Callable[[float], Awaitable[float | None]] | None = None
    served_at: float | None = None
    probed: bool = False

    async def probe_now(self, timeout_s: float = 120.0) -> None:
        if self.probe is not None:
            self.served_at, self.probed = await self.probe(timeout_s), True

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

    async def wait_current(self, node: str, timeout_s: float = 60.0) -> None:
        """Until every replica of the command and event streams reports current."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                ok = True
                for stream in ("MEMORY_COMMANDS", "MEMORY_EVENTS"):
                    cluster = (await self.admin.jetstream().stream_info(stream)).cluster
                    ok &= bool(cluster.leader) and all(r.current and not r.offline for r in cluster.replicas or [])
                if ok:
                    return
            except Exception:
                pass
            await asyncio.sleep(0.2)
        raise AssertionError(f"the replicas of {node} did not catch up within {timeout_s}s")

    async def step_down(self, stream: str, prefer: str) -> str:
        """Ask the stream's leader to hand over, preferably to `prefer` (nats-server 2.11+);
        returns who leads afterwards."""
        body = json.dumps({"placement": {"preferred": prefer}}).encode()
        try:
            reply = await self.admin.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", body, timeout=5)
            answer = json.loads(reply.data)
        except Exception as exc:
            return f"step-down failed: {exc!r}"
        if "error" in answer:
            return f"refused: {answer['error'].get('description')}"
        deadline = time.monotonic() + 10
        while (now := await self.leader(stream)) != prefer and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return f"now led by {now}"

    async def hold(self, seconds: float | None = None) -> None:
        await asyncio.sleep(self.hold_s if seconds is None else seconds)

    async def on_host(self, host: str, fn: Callable, *args) -> object:
        return await asyncio.to_thread(self.cluster.net.run_on, host, fn, *args)


Schedule = Callable[[Run], Awaitable[None]]


def others(node: str) -> list[str]:
    return [n for n in NODES if n != node]


async def _partitioned(run: Run, sides: list[list[str]], what: str) -> None:
    run.cluster.net.partition(*sides)
    run.note(f"{what} for {run.hold_s:.0f}s")
    await run.hold()
    run.cluster.net.heal()
    run.healed()


async def partition_leader_minority(run: Run) -> None:
    leader = await run.leader()
    await _partitioned(run, [[leader], others(leader)], f"{leader} (MEMORY_COMMANDS leader) cut from {others(leader)}")


async def partition_bridge(run: Run) -> None:
    leader = await run.leader()
    a, bridge = others(leader)
    await _partitioned(run, [[leader], [a]], f"{leader} (leader) cut from {a}; {bridge} reaches both,")


async def partition_leader_with_worker(run: Run) -> None:
    leader = await run.leader()
    where = await asyncio.to_thread(run.cluster.connected_to)
    # The worst case for a client: the worker left on the majority side is the one whose
    # connection is on the leader, so the cut leaves that connection open but dead.
    stale = next((w for w in WORKERS if leader in where.get(w, [])), WORKERS[1])
    with_leader = next(w for w in WORKERS if w != stale)
    await _partitioned(run, [[leader, with_leader], [*others(leader), stale]],
                       f"{leader} (leader) and {with_leader} cut from {others(leader)} and {stale} (PostgreSQL and "
                       f"the bot reach everyone; {stale} was connected to {where.get(stale)}, {with_leader} to "
                       f"{where.get(with_leader)})")


async def slow_lossy_leader(run: Run) -> None:
    leader = await run.leader()
    run.cluster.net.throttle(leader, "400kbit", "24kb")
    run.note(f"{leader} (leader)'s link throttled to 400 kbit/s with a 24 kB queue (delay, drops beyond it) "
             f"for {run.hold_s:.0f}s")
    await run.hold()
    run.cluster.net.unthrottle()
    run.healed()


async def pause_worker(run: Run) -> None:
    pause = ACK_WAIT_S + PIN_TIMEOUT_S + 5
    victim = max(run.cluster.workers, key=lambda w: run.cluster.workers[w].log_text().count('"event":"command"'))
    run.cluster.pause(victim)
    run.note(f"{victim} (the busier worker) SIGSTOPped {pause}s (ACK_WAIT_SECONDS={ACK_WAIT_S}, pin timeout "
             f"{PIN_TIMEOUT_S}s), then SIGCONT with its commands in hand")
    await run.hold(pause)
    run.cluster.resume(victim)
    run.healed()


async def pause_nats_leader(run: Run) -> None:
    leader = await run.leader()
    run.cluster.pause(leader)
    run.note(f"{leader} (leader) SIGSTOPped {run.hold_s:.0f}s, then SIGCONT")
    await run.hold()
    run.cluster.resume(leader)
    run.healed()


async def pause_postgres(run: Run) -> None:
    pids = run.cluster.pause("pg")
    run.note(f"PostgreSQL (the postmaster and its {len(pids) - 1} backends and helpers) SIGSTOPped "
             f"{run.hold_s:.0f}s, then SIGCONT")
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
    filler = await asyncio.to_thread(run.cluster.fill_disk, leader)
    run.note(f"{leader} (leader)'s store filled to the last byte for {run.hold_s:.0f}s, then freed")
    await run.hold()
    os.unlink(filler)
    # nats-server turns JetStream off on a write error and does not turn it back on when
    # space comes back: the node stays out of every stream until restarted. Restart it as
    # a liveness probe on /healthz?js-enabled-only=true would.
    if not await asyncio.to_thread(run.cluster.jetstream_enabled, leader):
        run.note(f"JetStream stayed disabled on {leader} after the space came back; restarted it")
        await asyncio.to_thread(run.cluster.restart_node, leader)
    run.healed()


async def full_disk_postgres(run: Run) -> None:
    filler = await asyncio.to_thread(run.cluster.fill_disk, "pg")
    run.note(f"PostgreSQL's data directory filled to the last byte for {run.hold_s:.0f}s, then freed")
    await run.hold()
    os.unlink(filler)
    if not run.cluster.pg.running:  # PostgreSQL stops itself when it cannot write its WAL
        await asyncio.to_thread(run.cluster.net.run_on, "pg", run.cluster.pg.start)
        run.note("PostgreSQL had stopped (WAL write failed) and was started again")
    run.healed()


async def _damage_minority(run: Run, how: str) -> None:
    leader = await run.leader()
    victim = others(leader)[0]
    run.cluster.kill(victim)
    damaged = []
    for blk in run.cluster.block_files(victim, raft_too=how == "corrupted"):
        size = blk.stat().st_size
        if how == "truncated":
            os.truncate(blk, size // 2)
        elif size:
            with open(blk, "r+b") as f:  # a run of garbage across the middle of the file
                f.seek(size // 3)
                f.write(os.urandom(max(1, size // 3)))
        damaged.append(f"{blk.relative_to(run.cluster.store_dir(victim))} ({size} B)")
    run.note(f"{victim} (follower) SIGKILLed, {len(damaged)} block files {how} "
             f"({'; '.join(damaged[:4])}{' ...' if len(damaged) > 4 else ''}), restarted after {run.hold_s:.0f}s")
    await run.hold()
    await asyncio.to_thread(run.cluster.start_node, victim)
    run.healed()
    # The damaged replica is then asked to lead both streams: whatever it failed to recover
    # and did not catch up on would be gone from the stream's point of view.
    await run.wait_current(victim)
    for stream in ("MEMORY_COMMANDS", "MEMORY_EVENTS"):
        answer = await run.step_down(stream, prefer=victim)
        run.note(f"{stream} leader asked to step down to {victim}: {answer}")


async def truncate_minority(run: Run) -> None:
    await _damage_minority(run, "truncated")


async def corrupt_minority(run: Run) -> None:
    await _damage_minority(run, "corrupted")


# How long the WAL stream to the standby is cut before the primary dies: commits made in that
# window are on the primary alone, unless they waited for the standby.
WAL_CUT_S = 2.0
# What the asynchronous control's primary commits alone before it dies, and how long that may take.
COMMITS_ALONE = 20
COMMITS_ALONE_BOUND_S = 15.0
# A failover's detection: how long after the primary died the standby is promoted.
PROMOTE_AFTER_S = 1.5


async def _promote_and_move(run: Run, new: str) -> None:
    await asyncio.to_thread(run.cluster.promote, new)
    run.cluster.move_service_address(new)
    run.healed()
    await run.probe_now()


async def _rejoin(run: Run, old: str) -> None:
    rewound = await asyncio.to_thread(run.cluster.rejoin_as_standby, old)
    sync = " and named the new primary's synchronous standby" if run.cluster.replication == "sync" else ""
    run.note(f"{old} rewound (pg_rewind: {rewound!r}), started as a standby of {run.cluster.primary}{sync}")


async def failover_kill_primary(run: Run) -> None:
    c = run.cluster
    old, new = c.primary, c.standby
    c.net.cut(old, new)
    alone = ""
    if c.replication == "async":
        # The negative control: the standby surely misses what the primary commits from now on,
        # and the primary dies only once it has committed some creates alone (bounded).
        await asyncio.to_thread(c.stop_receiving, new)
        since = await asyncio.to_thread(c.commits, old)
        await run.hold(WAL_CUT_S)
        deadline = time.monotonic() + COMMITS_ALONE_BOUND_S
        while (committed := await asyncio.to_thread(c.commits, old) - since) < COMMITS_ALONE \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        alone = f" (its WAL receiver stopped too; {committed} commands committed on {old} alone)"
    else:
        await run.hold(WAL_CUT_S)
    killed = c.kill_database(old)
    c.net.heal()
    run.note(f"{c.replication} replication: the WAL stream {old} -> {new} cut for {WAL_CUT_S:.0f}s{alone}, then the "
             f"primary {old} SIGKILLed ({killed} processes); {new} promoted {PROMOTE_AFTER_S}s later and the "
             f"service address moved to it")
    await run.hold(PROMOTE_AFTER_S)
    await _promote_and_move(run, new)
    await run.hold()
    await _rejoin(run, old)


async def failover_lost_primary(run: Run) -> None:
    c = run.cluster
    old, new = c.primary, c.standby
    c.set_link(old, False)
    run.note(f"{c.replication} replication: the primary {old}'s machine lost (its link down: every packet to it "
             f"vanishes, connections time out) for {run.hold_s:.0f}s, then {new} promoted and the service "
             f"address moved to it")
    await run.hold()
    await _promote_and_move(run, new)
    await run.hold(run.hold_s / 2)
    c.set_link(old, True)  # back, still a primary, on an address nobody is given: fenced
    run.note(f"{old} back after {run.hold_s / 2:.0f}s more, still running as a primary without the service address")
    await _rejoin(run, old)


async def switchover(run: Run) -> None:
    c = run.cluster
    old, new = c.primary, c.standby
    await asyncio.to_thread(c.net.run_on, old, c.pgs[old].stop)  # fast shutdown: the standby gets all WAL
    run.note(f"{c.replication} replication: planned switchover: {old} shut down (fast), {new} promoted, the service "
             f"address moved to it")
    await _promote_and_move(run, new)
    await run.hold()
    await _rejoin(run, old)


SCHEDULES: dict[str, Schedule] = {
    "partition-leader-minority": partition_leader_minority,
    "partition-bridge": partition_bridge,
    "partition-leader-with-worker": partition_leader_with_worker,
    "slow-lossy-leader": slow_lossy_leader,
    "pause-worker": pause_worker,
    "pause-nats-leader": pause_nats_leader,
    "pause-postgres": pause_postgres,
    "kill-leader-in-partition": kill_leader_in_partition,
    "full-disk-leader": full_disk_leader,
    "full-disk-postgres": full_disk_postgres,
    "truncate-minority": truncate_minority,
    "corrupt-minority": corrupt_minority,
    "failover-kill-primary": failover_kill_primary,
    "failover-lost-primary": failover_lost_primary,
    "switchover": switchover,
    "failover-kill-primary-async": failover_kill_primary,
}
# PostgreSQL as a primary and a standby (tests/faults/harness.py) for these; one server otherwise.
REPLICATION: dict[str, str] = {"failover-kill-primary": "sync", "failover-lost-primary": "sync", "switchover": "sync",
                               "failover-kill-primary-async": "async"}
# Negative controls: schedules whose guarantee is known not to hold. The checker must report
# the loss (the test fails if it does not): asynchronous replication loses what the primary
# acknowledged and the standby never received.
CONTROLS = ("failover-kill-primary-async",)
# Worker settings a schedule needs. A full disk held past the retry budget shows whether
# the worker counts it against MAX_DELIVER: 4 deliveries are 0.5 + 1 + 2 s of retries.
WORKER_SETTINGS: dict[str, dict[str, str]] = {
    "full-disk-postgres": {"MAX_DELIVER": "4"},
    # A deployment that counts on its synchronous standby says so: the worker checks at start.
    **{name: {"REQUIRE_SYNC_STANDBY": "true"} for name, mode in REPLICATION.items() if mode == "sync"},
}
# `make test`: what needs no extra package and stays short on two cores.
# The failover (about 30 s) shows in every run that a primary's death loses no acknowledged save.
SHORT = ("partition-leader-minority", "failover-kill-primary")
