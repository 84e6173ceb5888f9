"""A PostgreSQL outage must not use up a command's MAX_DELIVER budget (issue 4;
docs/design.md, section 9: an unreachable database or NATS is waited out without using up attempts).

One command is published while PostgreSQL is down, so its first deliveries (MAX_DELIVER=3 of
them, or more) all fail with "connection refused" and are logged `waiting_for_dependency`.
PostgreSQL comes back, and the command's first real attempt meets one serialization failure
(40001, provoked once by a trigger of the test's own: the kind of failure retrying fixes).
That is the command's first counted failure, 1 < MAX_DELIVER, so it must be retried and
saved.
"""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg

from contracts.kinds.create import SAVED
from tests.chaos.scenario import Bot, Command, Owner, Scenario, dead_letters
from tests.support.logs import log_events

FLAKY_ONCE = """
CREATE SEQUENCE chaos_flaky_attempts;
CREATE FUNCTION chaos_flaky_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- nextval is not rolled back: only the very first insert attempt fails.
    IF NEW.content LIKE 'flaky%' AND nextval('chaos_flaky_attempts') = 1 THEN
        RAISE EXCEPTION 'provoked serialization failure' USING ERRCODE = '40001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chaos_flaky_once BEFORE INSERT ON server_memories
    FOR EACH ROW EXECUTE FUNCTION chaos_flaky_once();
"""


async def test_deliveries_spent_waiting_for_postgres_do_not_count_toward_max_deliver(chaos_servers,
                                                                                     chaos_workers):
    max_deliver = 3
    scenario = Scenario([], [], [], [])
    await scenario.prepare(chaos_servers.database_url)
    conn = await asyncpg.connect(chaos_servers.database_url)
    try:
        await conn.execute(FLAKY_ONCE)
    finally:
        await conn.close()
    worker = chaos_servers.worker("worker-retry-budget", MAX_DELIVER=str(max_deliver))
    chaos_workers.append(worker)
    await asyncio.to_thread(worker.start)
    bot = await Bot(chaos_servers.nats.url).start()
    owner = Owner("server", "940000000000000001", False, True, ())
    cmd = Command("chaos-budget-1", owner.owner_id, owner, "flaky note after an outage")
    try:
        await asyncio.to_thread(chaos_servers.stop_postgres)
        await bot.publish(cmd)

        def waits() -> list[int]:
            return [e["deliveries"] for e in log_events(worker.log_text())
                    if e.get("event") == "waiting_for_dependency" and e.get("command_id") == cmd.command_id]

        deadline = time.monotonic() + 20
        while max(waits(), default=0) < max_deliver:
            assert time.monotonic() < deadline, f"deliveries while PostgreSQL is down: {waits()}"
            await asyncio.sleep(0.05)
        await asyncio.to_thread(chaos_servers.start_postgres)

        deadline = time.monotonic() + 40
        while not bot.replies.get(cmd.command_id):
            assert time.monotonic() < deadline, "no result 40 s after PostgreSQL came back"
            await asyncio.sleep(0.05)
        result = json.loads(bot.replies[cmd.command_id][0])
        dlq = await dead_letters(bot.nc)
    finally:
        await bot.close()
    attempts = [(e.get("event"), e.get("deliveries"), e.get("status"))
                for e in log_events(worker.log_text()) if e.get("command_id") == cmd.command_id]
    print(f"\nretry budget: status={result['data']['status']} dlq={dlq} attempts={attempts}")
    assert result["data"]["status"] == SAVED, attempts
    assert dlq == 0
