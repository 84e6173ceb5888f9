"""Shadow mode end to end (docs/design.md, section 3.6; issue 38): a bot that still writes its
TomoriBot database itself shadows every write with the running worker's dry run, over NATS
only, and `memoryctl shadow report` names what differed.

The bot: it decides and writes with the worker's domain code run in its own process, on its
own connections to the bot's tables (that code is held to TomoriBot's rules by the parity
tests, docs/tomoribot.md section 10), under command ids of its own (`bot-...`), and publishes
nothing. In the first workspace one rule is changed on purpose: the bot's server-memory cap is
two more than the worker's. The report names the cap's cases and only those. In the second,
the rule restored, every pair agrees. Afterwards no memory row, event or stored result came
from a dry run. Last, a secret the bot saved and the worker refused is shown as its kind, and
a report with nothing to compare is counted apart.

Its own nats-server and worker, on an adopted TomoriBot database (tests/e2e/test_e2e_adopted.py's
setup).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import asyncpg
import msgspec
import nats
import pytest

from contracts import subjects
from contracts.registry import COMMAND_TYPES
from db.pool import create_pool
from db.repository import MemoryRepository
from tests import tomoribot
from tests.conftest import WorkerProcess, unique, worker_env
from tests.e2e.bus import create_fields
from tests.integration.worlds import World
from tests.memoryctl import memoryctl as in_process
from tests.support.commands import as_command, create_command, reinforce_fields, seed_bio_fields, update_fields
from tests.support.secret_corpus import CREDENTIALS
from tests.support.services import service_table
from tests.support.waiting import wait_until
from worker.client.memory_client import MemoryClient
from worker.consuming.limits import limits_from
from worker.local.embedded import NatsServer
from worker.shared.settings import Settings

CAPS = {"MAX_SERVER_MEMORIES": "5", "MAX_PERSONAL_MEMORIES": "5"}
LINEAGE = 5150
# The statuses of the capacity rule, in the create's and the panels' words.
CAP_STATUSES = {"memory_save_failed_limit_exceeded", "memory_saved_with_eviction", "limit-reached",
                "batch-limit-reached", "added", "memory_saved_successfully", "imported"}
CREATED = {"memory_saved_successfully", "memory_saved_with_eviction", "added", "imported", "seeded"}
CAP_REFUSALS = {"memory_save_failed_limit_exceeded", "limit-reached", "batch-limit-reached"}


@pytest.fixture(scope="module")
async def shadowed(pg_server, tmp_root):
    dsn, _ = await tomoribot.seeded_database(pg_server.dsn)
    name = unique("shadow-")
    env = worker_env("nats://unused", dsn, **CAPS)
    adopted = await in_process(["adopt"], env)
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    nats_server = NatsServer(tmp_root / f"nats-{name}").start()
    worker = WorkerProcess(worker_env(nats_server.url, dsn, **CAPS), tmp_root / f"worker-{name}.log")
    await asyncio.to_thread(worker.start)
    nc = await nats.connect(nats_server.url)
    client = await MemoryClient(nc, timeout=20.0).__aenter__()
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        yield SimpleNamespace(dsn=dsn, env=env, nc=nc, memory=client, pool=pool,
                              worker_limits=limits_from(Settings.from_env(env)))
    finally:
        await client.__aexit__(None, None, None)
        await nc.drain()
        await asyncio.to_thread(worker.stop)
        nats_server.stop()
        await pool.close()


class TomoriBotStandIn:
    """The bot's own writes: the worker's domain code and SQL, in the bot's process, with its
    own limits, storing under `bot-<id>` and publishing nothing."""

    def __init__(self, pool: asyncpg.Pool, limits: Any) -> None:
        self._services = service_table(MemoryRepository(pool), limits)

    def write(self, kind: str, cmd: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def own_write() -> dict[str, Any]:
            mine = msgspec.structs.replace(cmd, command_id=f"bot-{cmd.command_id}", reply_to=None)
            handled = await self._services[kind].run(mine, None)
            result: dict[str, Any] = msgspec.json.decode(handled.answer.result)
            return result
        return own_write


@dataclasses.dataclass
class Phase:
    workspace: str
    server_id: int
    dry_ids: list[str]
    created: set[int]  # the server memories the bot's own writes created


async def run_phase(s: SimpleNamespace, bot: TomoriBotStandIn) -> Phase:
    """About 150 writes of every kind in a new workspace, each shadowed."""
    world = World("adopted", s.pool)
    ws, server_id = await world.workspace()
    persona = await world.persona(server_id, LINEAGE)
    people = [await world.user() for _ in range(3)]
    dry_ids: list[str] = []
    created: set[int] = set()
    counter = itertools.count()

    async def shadow(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        cmd = as_command(COMMAND_TYPES[kind], fields["workspace_id"], fields)
        dry_ids.append(cmd.command_id)
        result: dict[str, Any] = await s.memory.shadowed(kind, cmd, bot.write(kind, cmd), timeout=10.0)
        data = result["data"]
        server = data.get("scope") == "server_wide" if kind == "create" else fields.get("scope") == "server"
        if server and data["status"] in CREATED:
            created.update(data.get("memory_ids") or [data["memory_id"]])
        return result

    def save(content: str, **over: Any) -> dict[str, Any]:
        return create_fields(ws, content, lineage_id=LINEAGE, persona_id=persona, **over)

    saved: list[int] = []
    for i in range(60):  # past both caps: the worker's (5) and the bot's
        result = await shadow("create", save(f"server fact number {next(counter)} about tea {i}"))
        if result["data"].get("memory_id"):
            saved.append(result["data"]["memory_id"])
    personal: list[int] = []
    for disc_id, _ in people:
        for i in range(8):
            result = await shadow("create", save(f"likes song {i} of {disc_id[-4:]}", scope="target_user",
                                                 target=f"Mika{disc_id[-3:]}",
                                                 member_matches=[{"id": disc_id, "display_name": f"Mika{disc_id[-3:]}"}]))
            if result["data"].get("memory_id"):
                personal.append(result["data"]["memory_id"])
    for memory_id in saved[:3]:
        await shadow("update", update_fields(ws, memory_id, f"edited fact {memory_id}", lineage_id=LINEAGE,
                                             persona_id=persona))
    await shadow("update", update_fields(ws, saved[3], "", lineage_id=LINEAGE, persona_id=persona))
    await shadow("update", update_fields(ws, 10**9, "no such memory", lineage_id=LINEAGE, persona_id=persona))
    actor = {"id": people[0][0], "is_manager": True}
    panel = {"workspace_id": ws, "actor": actor, "scope": "server", "lineage_id": LINEAGE, "persona_id": persona}
    for i in range(6):
        await shadow("manual", {**panel, "action": "add", "content": f"panel fact {i}"})
    await shadow("manual", {**panel, "action": "edit", "memory_id": saved[0], "content": "a person's own words"})
    await shadow("manual", {**panel, "action": "remove", "memory_id": saved[1]})
    await shadow("manual", {**panel, "scope": "personal", "action": "add", "content": "my own note"})
    for i in range(40):
        refs = [("server", m) for m in saved[i % 3: i % 3 + 2]] + [("personal", m) for m in personal[:2]]
        await shadow("reinforce", {"workspace_id": ws, **reinforce_fields(refs, lineage_id=LINEAGE)})
    for _ in range(3):
        identity, _ = await world.proxy([people[1][0]])
        await shadow("seed_bio", {"workspace_id": ws, **seed_bio_fields(identity, "a fox who likes tea")})
    return Phase(ws, server_id, dry_ids, created)


async def report(s: SimpleNamespace, ws: str, dry_ids: list[str]) -> dict[str, Any]:
    await s.memory.shadow_reports_sent()

    async def all_reported() -> bool:
        done: int = await s.pool.fetchval(
            "SELECT count(*) FROM memory_worker.shadow_pairs WHERE command_id = ANY($1::text[])"
            " AND outcome IS NOT NULL", dry_ids)
        return done == len(dry_ids)

    await wait_until(all_reported, timeout=60, what="every shadow report paired")
    shown = await in_process(["shadow", "report", "--workspace", ws, "--json", "--top", "100"], s.env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    text = await in_process(["shadow", "report", "--workspace", ws], s.env)
    assert text.returncode == 0 and ws not in text.stderr
    return {**json.loads(shown.stdout), "text": text.stdout}


def unexplained(shown: dict[str, Any]) -> dict[str, int]:
    """Per kind shadowed, how many unexplained differences its verdict names."""
    return {kind: sum(m["pairs"] for m in verdict["missing"] if m["reason"] == "unexplained_differences")
            for kind, verdict in shown["verdicts"].items()}


async def nothing_came_from_a_dry_run(s: SimpleNamespace, phases: list[Phase]) -> None:
    dry_ids = [command_id for phase in phases for command_id in phase.dry_ids]
    stored = await s.pool.fetchval("SELECT count(*) FROM memory_worker.processed_commands"
                                   " WHERE command_id = ANY($1::text[])", dry_ids)
    assert stored == 0, "a dry run stored a result"
    for phase in phases:  # every server memory there is one the bot's own write created
        rows = await s.pool.fetch("SELECT server_memory_id FROM server_memories WHERE server_id = $1", phase.server_id)
        assert rows and {r[0] for r in rows} <= phase.created
    events = await s.nc.jetstream().stream_info(subjects.EVENTS_STREAM)
    assert events.state.messages == 0, "an event was published (the bot publishes none, a dry run must not)"


async def test_a_changed_rule_is_named_and_only_it_then_full_agreement(shadowed):
    s = shadowed
    changed = TomoriBotStandIn(s.pool, dataclasses.replace(s.worker_limits, max_server_memories=7))
    one = await run_phase(s, changed)
    first = await report(s, one.workspace, one.dry_ids)
    assert len(one.dry_ids) >= 140
    assert first["pairs"] == len(one.dry_ids)
    totals = first["totals"]
    assert totals["differed"] > 0
    assert totals["concurrent"] == totals["timed_out"] == totals["unpaired"] == totals["waiting"] == 0
    for row in first["by_status"]:  # every status the cap does not decide agreed throughout
        if row["status"] not in CAP_STATUSES:
            assert row["differed"] == 0, row
    for difference in first["differences"]:  # each difference is the cap's: one side refused at it
        assert {difference["worker_status"], difference["bot_status"]} & CAP_REFUSALS, difference
        assert difference["intended"] is None
    kinds = {d["kind"] for d in first["differences"]}
    assert kinds <= {"create", "manual"}, kinds
    assert "most frequent differences" in first["text"] and "memory_save_failed_limit_exceeded" in first["text"]
    # The verdict counts every one of them as unexplained, and the bot may not switch.
    assert unexplained(first) == {kind: sum(row["differed"] for row in first["by_status"] if row["kind"] == kind)
                                  for kind in first["verdicts"]}
    assert first["switch"] is False and first["text"].startswith("verdict: not yet")

    restored = TomoriBotStandIn(s.pool, s.worker_limits)
    two = await run_phase(s, restored)
    second = await report(s, two.workspace, two.dry_ids)
    assert second["totals"]["agreed"] == second["pairs"] == len(two.dry_ids), second
    assert second["differences"] == []
    assert "no differences" in second["text"]
    assert {row["kind"] for row in second["by_status"]} == {"create", "update", "manual", "reinforce", "seed_bio"}
    # Nothing left unexplained or unmeasured: what keeps a kind from ready is only the trial's size.
    assert set(unexplained(second).values()) == {0} and second["not_shadowed"] == []
    assert {m["reason"] for v in second["verdicts"].values() for m in v["missing"]} <= {"statuses_never_seen",
                                                                                        "too_few_pairs"}

    await nothing_came_from_a_dry_run(s, [one, two])


async def test_a_secret_the_bot_saved_is_reported_as_its_kind_and_an_empty_report_as_nothing_compared(shadowed):
    """The bot has no secret guard: it saves what the worker's dry run refused, and reports its
    result with the text. The report shows the credential's kind, never the text; a report of
    nothing to compare is counted apart, never as agreement."""
    s = shadowed
    credential = CREDENTIALS[0]
    bot = TomoriBotStandIn(s.pool, dataclasses.replace(s.worker_limits, secret_guard_default=False))
    world = World("adopted", s.pool)
    ws, server_id = await world.workspace()
    persona = await world.persona(server_id, LINEAGE)
    dry_ids: list[str] = []
    for content, reported in ((credential.content, None), ("likes tea", lambda value: {"data": {}})):
        cmd = create_command(ws, content, lineage_id=LINEAGE, persona_id=persona)
        dry_ids.append(cmd.command_id)
        result = await s.memory.shadowed("create", cmd, bot.write("create", cmd), reported=reported, timeout=10.0)
        assert result["data"]["status"] == "memory_saved_successfully"
    shown = await report(s, ws, dry_ids)
    assert shown["totals"]["differed"] == shown["totals"]["nothing_compared"] == 1
    assert shown["totals"]["agreed"] == 0
    assert [d["intended"] for d in shown["differences"]] == ["secret_guard"]
    printed = json.dumps(shown)
    assert credential.secret not in printed and f"<credential withheld: {credential.kind}>" in printed
    assert credential.secret not in shown["text"] and credential.kind in shown["text"]
