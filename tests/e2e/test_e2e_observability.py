"""The worker's /metrics and /healthz, scraped after commands it handled."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from contracts.kinds.create import INVALID_ARGS, SAVED, SAVED_WITH_EVICTION
from tests.e2e.bus import RAG, create_fields, unique
from tests.e2e.directory import add_old_server_memories
from tests.support.directory import add_server
from tests.support.logs import log_events
from tests.support.scrape import get, samples, value
from tests.support.waiting import wait_until

# The release pyproject.toml names: the one the worker says it is.
RELEASE = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]


async def test_healthz_is_ready(e2e_worker):
    assert await asyncio.to_thread(get, f"{e2e_worker.metrics_url}/healthz") == (200, f"ok\nmemory-worker {RELEASE}\n")


async def test_counters_move_by_the_commands_handled(e2e_worker, memory, bot_db):
    ws, full = unique(), unique()
    await add_server(bot_db, ws)
    server_id = await add_server(bot_db, full, decay=True)
    await add_old_server_memories(bot_db, server_id, 7, [(f"old {d}", d) for d in (60, 61, 62, 63, 64)])
    before = await samples(e2e_worker.metrics_url)

    for i in range(3):
        assert (await memory.create(create_fields(ws, f"fact {i}"))).data.status == SAVED
    assert (await memory.create(create_fields(ws, tool_args={"memory_scope": "nowhere"}))).data.status == \
        INVALID_ARGS
    evicted = await memory.create(create_fields(full, "replaces the oldest", retrieval=RAG))
    assert evicted.data.status == SAVED_WITH_EVICTION
    after = await samples(e2e_worker.metrics_url)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("memory_commands_total", kind="create", status=SAVED) == 3
    assert delta("memory_commands_total", kind="create", status=INVALID_ARGS) == 1
    assert delta("memory_commands_total", kind="create", status=SAVED_WITH_EVICTION) == 1
    assert delta("memory_evictions_total", scope="server") == 1
    assert delta("memory_command_duration_seconds_count", kind="create") == 5
    assert value(after, "memory_worker_ready") == 1


async def test_each_command_gets_one_canonical_log_line_saying_where_its_time_went(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    assert (await memory.create(create_fields(ws, "likes green tea"))).data.status == SAVED

    def lines() -> list[dict]:
        return log_events(e2e_worker.log_text(), "command", workspace=ws)

    await wait_until(lines, timeout=5)  # logged after the reply, once acknowledged
    [line] = lines()
    assert line["kind"] == "create" and line["status"] == SAVED and line["events"] == 2
    assert line["command_id"] and line["deliveries"] == 1 and line["queued_ms"] >= 0
    # The service and the events' storing are parts of the handler's time (each rounded to 0.01 ms).
    assert line["db_ms"] > 0 and line["events_ms"] > 0
    assert line["db_ms"] + line["events_ms"] <= line["duration_ms"] + 0.02
