"""Kill -9 the worker at random moments while creates (with evictions) are in flight, restart
it, repeat (issue 4; docs/design.md, sections 2 and 5).

Afterwards every command has exactly one stored result and exactly one effect, every cap
holds, every eviction removed one distinct legacy row (the oldest left), and every committed
save has exactly one `memory.saved` and one `cache.invalidate` in MEMORY_EVENTS: none lost,
none duplicated (counted by Nats-Msg-Id and by the payload's event_id).

How the moments are chosen: a killed worker's in-flight commands come back only after
ACK_WAIT_SECONDS (20, the minimum), and the restarted worker runs nothing newer in their
partitions until they are back. Were every command published up front, the first kill would stall every partition and
the next kills would hit an idle worker. So the bot publishes in K+1 groups whose workspaces
live in disjoint partitions (MEMORY_PARTITIONS = max(16, 4(K+1))), and kill k comes when a
seeded random share (5-95 %) of group k has a stored result: every kill lands in the middle
of work (in a transaction, between commit and publish, between publish and ack ...), and the
partitions it stalls are redelivered while the next groups run.

    CHAOS_COMMANDS=5000 CHAOS_KILLS=8 pytest -s tests/chaos/test_worker_kills.py
"""

from __future__ import annotations

import asyncio
import random
import time

from tests.chaos.scenario import Bot, Db, Scenario, dead_letters, log_counts, verify, wait_commands_acknowledged
from tests.support.env import env_int

ACK_WAIT = 20


async def test_kill_9_worker_at_random_moments_loses_and_duplicates_nothing(chaos_servers, chaos_workers):
    n = env_int("CHAOS_COMMANDS", 600)
    kills = env_int("CHAOS_KILLS", 3)
    seed = env_int("CHAOS_SEED", 20240611)
    partitions = max(16, 4 * (kills + 1))
    rng = random.Random(seed)
    started = time.monotonic()

    scenario = Scenario.build(n, seed, tag="k")
    groups = scenario.phases(kills + 1, partitions)
    await scenario.prepare(chaos_servers.database_url)
    worker = chaos_servers.worker("worker-kills", ACK_WAIT_SECONDS=str(ACK_WAIT), MEMORY_PARTITIONS=str(partitions))
    chaos_workers.append(worker)
    await asyncio.to_thread(worker.start)
    first_pid = worker.pid
    db = Db(chaos_servers.database_url)
    bot = await Bot(chaos_servers.nats.url).start()
    kill_log: list[tuple[float, str]] = []  # (seconds into the run, group progress at the kill)

    async def kill_during(group: list, publishing: asyncio.Task) -> None:
        ids = [c.command_id for c in group]
        target = max(1, round(len(ids) * rng.uniform(0.05, 0.95)))
        deadline = time.monotonic() + 15.0  # a group never takes this long; kill anyway if it does
        done = 0
        while time.monotonic() < deadline:
            done = await db.processed(ids) or 0
            if done >= target:
                break
            await asyncio.sleep(0.005)
        kill_log.append((round(time.monotonic() - started, 2), f"{done}/{len(ids)}"))
        worker.kill()
        await publishing  # the bot is still publishing the group? Let it finish while the worker is down.
        await asyncio.to_thread(worker.start)

    try:
        for k, group in enumerate(groups):
            publishing = asyncio.create_task(bot.publish_all(group))
            if k < kills:
                await kill_during(group, publishing)
            else:
                await publishing
        await db.wait_processed(n, timeout=60.0 + 2 * ACK_WAIT + n / 50)
        unacknowledged = await wait_commands_acknowledged(bot.nc, timeout=30.0)
        report = await verify(scenario, db, bot, replies_required=True)
        dlq = await dead_letters(bot.nc)
    finally:
        await bot.close()
        await db.close()
    counts = log_counts(worker.log_text())
    elapsed = time.monotonic() - started
    print(f"\nCHAOS worker-kills: commands={report.commands} kills={worker.kills} lost={report.lost} "
          f"duplicated={report.duplicated} unexpected_events={report.unexpected} events={report.events} "
          f"statuses={dict(report.statuses)} redelivered={counts['redelivered']} "
          f"committed_before_crash={counts['committed_before_crash']} events_not_stored={counts['events_not_stored']} "
          f"replies_missing={report.replies_missing} replies_repeated={report.replies_repeated} dlq={dlq} "
          f"partitions={partitions} groups={[len(g) for g in groups]} seed={seed} "
          f"kills_at(s,group_progress)={kill_log} elapsed={elapsed:.1f}s")

    assert worker.kills == kills and (kills == 0 or worker.pid != first_pid)
    assert unacknowledged == 0, f"{unacknowledged} commands never acknowledged (events never stored?)"
    assert dlq == 0, f"{dlq} commands dead-lettered"
    assert report.problems == [], "\n".join(report.problems)
    assert report.lost == 0 and report.duplicated == 0
