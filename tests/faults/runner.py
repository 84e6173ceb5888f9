"""One fault run: the bot's load, the schedule's fault, the probe for service after the
heal, the wait until everything acknowledged is applied, and the checker's verdict. All of
it runs on the bot's host (an asyncio loop in a thread inside its namespace)."""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg
import nats

from tests.cluster.nats_deploy import PASSWORDS
from tests.faults.bot import Bot
from tests.faults.checker import Verdict, check, connect_db, wait_settled
from tests.faults.harness import CAP, NODES, FaultCluster
from tests.faults.schedules import CONTROLS, SCHEDULES, Run

WARM_UP_RESULTS = 30
PROBE_TIMEOUT_S = 120.0
SETTLE_TIMEOUT_S = 180.0
# A negative control never settles (what it lost stays lost): the checker looks after this.
CONTROL_SETTLE_S = 15.0


async def _stored(dsn: str) -> int:
    try:
        db = await connect_db(dsn)
    except (OSError, asyncpg.PostgresError):
        return 0
    try:
        return await db.fetchval("SELECT count(*) FROM processed_commands")
    finally:
        await db.close()


async def _wait_stored(dsn: str, at_least: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while await _stored(dsn) < at_least:
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {at_least} stored results after {timeout_s}s")
        await asyncio.sleep(0.2)


def check_replicas(cluster: FaultCluster, verdict: Verdict, timeout_s: float = 30.0) -> None:
    """Every node runs JetStream, and its replica of each stream holds what the others'
    hold (a node that recovered less than it had, and did not catch up, differs)."""
    verdict.found("nodes without JetStream", [n for n in NODES if not cluster.jetstream_enabled(n)])
    deadline = time.monotonic() + timeout_s
    while True:
        states = {stream: {n: cluster.stream_state(n, stream) for n in NODES}
                  for stream in ("MEMORY_COMMANDS", "MEMORY_EVENTS")}
        differ = [(stream, by_node) for stream, by_node in states.items()
                  if len({json.dumps(v, sort_keys=True) for v in by_node.values()}) > 1]
        if not differ or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    verdict.found("replicas differ", differ)


def longest_gap(bot: Bot, since: float) -> float:
    """The longest time from the fault on during which no command got an answer."""
    answers = sorted(t for s in bot.history for t, _ in s.replies if t >= since)
    points = [since, *answers]
    return max((b - a for a, b in zip(points, points[1:])), default=0.0)


async def run_schedule(cluster: FaultCluster, name: str, *, hold_s: float, tail_s: float,
                       lanes: int = 8, pace_s: float = 0.1) -> tuple[Verdict, Bot]:
    admin = await nats.connect(cluster.nats_urls, user="memory-admin", password=PASSWORDS["memory-admin"],
                               inbox_prefix="_INBOX.admin",
                               ping_interval=2, max_outstanding_pings=2, max_reconnect_attempts=-1,
                               reconnect_time_wait=0.5, connect_timeout=2)
    bot = await Bot(cluster.nats_urls, "bot-tomori", PASSWORDS["bot-tomori"], per_workspace=CAP + 3,
                    lanes=lanes, pace_s=pace_s).start()
    run = Run(cluster, admin, hold_s, probe=bot.probe)
    try:
        bot.start_load()
        await _wait_stored(cluster.database_url, WARM_UP_RESULTS, 60)
        began_at = time.monotonic()
        await SCHEDULES[name](run)
        served_at = run.served_at if run.probed else await bot.probe(PROBE_TIMEOUT_S)
        await asyncio.sleep(tail_s)  # load goes on after the heal for this long
        await bot.stop_load()
        settled_at = await wait_settled(cluster.database_url, bot.history, admin,
                                        CONTROL_SETTLE_S if name in CONTROLS else SETTLE_TIMEOUT_S)
        verdict = await check(name, bot, cluster.database_url, admin, cap=CAP)
        await asyncio.to_thread(check_replicas, cluster, verdict)
    finally:
        await bot.close()
        await admin.close()
    verdict.injected = "; ".join(run.injected)
    verdict.longest_gap_s = longest_gap(bot, began_at)
    if run.healed_at is not None:
        verdict.recovery_s = None if served_at is None else max(0.0, served_at - run.healed_at)
        verdict.caught_up_s = None if settled_at is None else max(0.0, settled_at - run.healed_at)
    if served_at is None:
        verdict.found("no answer after the heal", [name])
    return verdict, bot
