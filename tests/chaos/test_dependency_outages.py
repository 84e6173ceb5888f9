"""Stop PostgreSQL for a few seconds mid-run, then NATS, under a running worker (issue 4;
docs/design.md, sections 2 and 9).

Both come back on the same port with the same data directory (NATS with its JetStream store,
written with `sync_interval: always`). The worker must ride both out by itself: same PID,
still running, `waiting_for_dependency` and `nats_disconnected` in its log, and afterwards
the same checks as the kill test (one result and one effect per command, caps, evictions,
events neither lost nor duplicated). Transient unavailability must not count toward
MAX_DELIVER (3 here), so the dead-letter stream stays empty.

The bot keeps publishing through the NATS outage, retrying each publish with its
Nats-Msg-Id until JetStream is back. A reply the worker sent just as NATS went down may be
lost (core NATS is at most once); the bot then asks the worker's result lookup, as
MemoryClient does after a timeout, so every command must still be answered.

    CHAOS_COMMANDS=5000 pytest -s tests/chaos/test_dependency_outages.py
"""

from __future__ import annotations

import asyncio
import random
import time

from tests.chaos.scenario import Bot, Db, Scenario, dead_letters, log_counts, verify, wait_commands_acknowledged
from tests.support.env import env_int

ACK_WAIT = 20
OUTAGE_S = float(env_int("CHAOS_OUTAGE_SECONDS", 3))


async def test_worker_rides_out_postgres_then_nats_restart(chaos_servers, chaos_workers):
    n = env_int("CHAOS_COMMANDS", 600)
    seed = env_int("CHAOS_SEED", 20240611)
    rng = random.Random(seed + 1)
    started = time.monotonic()

    scenario = Scenario.build(n, seed, tag="o")
    third = n // 3
    before_pg, during_pg, during_nats = (scenario.commands[:third], scenario.commands[third:2 * third],
                                         scenario.commands[2 * third:])
    await scenario.prepare(chaos_servers.database_url)
    worker = chaos_servers.worker("worker-outages", ACK_WAIT_SECONDS=str(ACK_WAIT))
    chaos_workers.append(worker)
    await asyncio.to_thread(worker.start)
    pid = worker.pid
    db = Db(chaos_servers.database_url)
    bot = await Bot(chaos_servers.nats.url).start()
    timeline: list[tuple[float, str]] = []

    def mark(what: str) -> None:
        timeline.append((round(time.monotonic() - started, 2), what))

    async def reach(commands: list, share: float, timeout: float = 30.0) -> None:
        """Until a share of these commands has a stored result: the outage starts mid-work."""
        ids = [c.command_id for c in commands]
        target = max(1, round(len(ids) * share))
        deadline = time.monotonic() + timeout
        while (await db.processed(ids) or 0) < target:
            assert time.monotonic() < deadline, f"{target} of {len(ids)} commands not processed in {timeout}s"
            await asyncio.sleep(0.005)

    try:
        # (a) PostgreSQL goes away while the first third is being worked through; the second
        #     third is published while it is away.
        publishing = asyncio.create_task(bot.publish_all(before_pg))
        await reach(before_pg, rng.uniform(0.2, 0.6))
        mark("postgres stop")
        await asyncio.to_thread(chaos_servers.stop_postgres)
        await publishing
        await bot.publish_all(during_pg)
        await asyncio.sleep(OUTAGE_S)  # the outage itself
        mark("postgres start")
        await asyncio.to_thread(chaos_servers.start_postgres)

        # (b) NATS goes away while the second third is being worked through; the last third is
        #     published during the outage (the bot retries until NATS is back).
        await reach(during_pg, rng.uniform(0.2, 0.6), timeout=60.0)
        mark("nats stop")
        await asyncio.to_thread(chaos_servers.stop_nats)
        publishing = asyncio.create_task(bot.publish_all(during_nats))
        await asyncio.sleep(OUTAGE_S)
        mark("nats start")
        await asyncio.to_thread(chaos_servers.start_nats)
        await publishing
        mark("all published")

        await db.wait_processed(n, timeout=60.0 + 2 * ACK_WAIT + n / 50)
        mark("all processed")
        unacknowledged = await wait_commands_acknowledged(bot.nc, timeout=30.0)
        report = await verify(scenario, db, bot, replies_required=False)
        dlq = await dead_letters(bot.nc)
    finally:
        await bot.close()
        await db.close()
    counts = log_counts(worker.log_text())
    print(f"\nCHAOS outages: commands={report.commands} lost={report.lost} duplicated={report.duplicated} "
          f"unexpected_events={report.unexpected} events={report.events} statuses={dict(report.statuses)} "
          f"waiting_for_dependency={counts['waiting_for_dependency']} nats_disconnected={counts['nats_disconnected']} "
          f"nats_reconnected={counts['nats_reconnected']} events_not_stored={counts['events_not_stored']} "
          f"command_retry={counts['command_retry']} "
          f"redelivered={counts['redelivered']} committed_before_outage={counts['committed_before_crash']} "
          f"bot_publish_retries={bot.publish_retries} bot_duplicate_acks={bot.duplicate_acks} "
          f"replies_missing={report.replies_missing} replies_repeated={report.replies_repeated} dlq={dlq} "
          f"seed={seed} timeline={timeline} elapsed={time.monotonic() - started:.1f}s")

    assert worker.running and worker.pid == pid, "the worker must recover without a restart"
    assert counts["waiting_for_dependency"] > 0, "no waiting_for_dependency in the worker log"
    assert counts["nats_disconnected"] > 0, "no nats_disconnected in the worker log"
    assert bot.publish_retries > 0, "the NATS outage never made the bot retry: it did not happen mid-publish"
    assert unacknowledged == 0, f"{unacknowledged} commands never acknowledged (events never stored?)"
    assert dlq == 0, f"{dlq} commands dead-lettered"
    assert report.problems == [], "\n".join(report.problems)
    assert report.lost == 0 and report.duplicated == 0
