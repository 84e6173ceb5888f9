"""MEMORY_COMMANDS as the running worker keeps it: applied commands leave the stream at the
next purge, the backlog metrics say so, and every metric the published alert rules use is
one the worker exports."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import yaml

from contracts.kinds.create import SAVED
from tests.e2e.bus import commands_purged, create_fields, unique
from tests.support.directory import add_server
from tests.support.scrape import get, samples, value
from tests.support.waiting import wait_until

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yaml"


async def test_applied_commands_are_purged_and_the_backlog_is_reported(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)
    saved = [await memory.create(create_fields(ws, f"kept briefly {i}")) for i in range(3)]
    assert {r.data.status for r in saved} == {SAVED}

    await wait_until(lambda: commands_purged(nc, ws), timeout=15, interval=0.2)

    async def reported() -> bool:
        found = await samples(e2e_worker.metrics_url)
        return value(found, "memory_commands_max_age_seconds") > 0 and \
            value(found, "memory_commands_unconsumed") == 0 and \
            value(found, "memory_commands_oldest_unconsumed_age_seconds") == 0
    await wait_until(reported, timeout=15, interval=0.5)
    found = await samples(e2e_worker.metrics_url)
    # The defaults: 7 days, 1 GiB.
    assert value(found, "memory_commands_max_age_seconds") == 7 * 24 * 3600
    assert value(found, "memory_commands_max_bytes") == 1024**3


async def test_every_metric_of_the_alert_rules_is_exported(e2e_worker):
    rules = [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    assert {r["alert"] for r in rules} >= {"MemoryCommandsNearAgeLimit", "MemoryCommandsNearSizeLimit",
                                          "MemoryWorkersDown"}

    async def exported() -> set[str]:
        status, text = await asyncio.to_thread(get, f"{e2e_worker.metrics_url}/metrics")
        return set(re.findall(r"^(memory_[a-z_]+)", text, re.M)) if status == 200 else set()

    names = await exported()
    for rule in rules:
        used = set(re.findall(r"\bmemory_[a-z_]+", rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)
