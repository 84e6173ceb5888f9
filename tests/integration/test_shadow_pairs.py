"""memory.shadow on real PostgreSQL (worker/kinds/shadow/service.py): how a report is paired with its
dry run and stored (unpaired, timed out, another kind, a repeat, nothing compared, a concurrent
insert of the same owner or of another, a dry run the secret guard refused, marked intended,
with the bot's credential kept as its kind, a large report kept bounded), and refused when it
names another workspace's or bot's dry run; and the Python client's shadowed() call on a real
nats-server with no worker: the bot's write is held up no longer than the timeout, its value or
error passes through unchanged, and the report still goes out, marked timed out."""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
import nats
import pytest

from contracts import subjects
from contracts.kinds.shadow import ShadowReport
from db.repository import MemoryRepository
from tests.support.commands import shadow_command
from tests.support.secret_corpus import CREDENTIALS
from worker.cli.shadow import build_report, render
from worker.client.memory_client import MemoryClient
from worker.consuming.administration import streams
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.shadow.comparison import KEPT_DIFFERENCES_BYTES, MORE_FIELD
from worker.kinds.shadow.service import DryRunning, ShadowReportService
from worker.shared.settings import Settings

from .helpers import module_database, server_save

SAVED: dict[str, Any] = {"success": True, "data": {"status": "memory_saved_successfully"}}
SAVED_BY_BOT = {"success": True, "message": "Memory saved successfully", "data": {"status": "memory_saved_successfully"}}


@pytest.fixture(scope="module")
async def pool(pg_server, template_db):
    async with module_database(pg_server, template_db) as shared:
        yield shared


def report(shadowed_id: str, workspace: str = "1001", **fields: Any) -> ShadowReport:
    return shadow_command(workspace, shadowed_id, **{"result": SAVED, **fields})


async def paired(pool, cmd: ShadowReport, tenant: str = "") -> dict[str, Any]:
    handled = await ShadowReportService(MemoryRepository(pool, tenant)).run(cmd)
    assert handled.events == [] and handled.answer.shadowed is not None
    answer: dict[str, Any] = msgspec.json.decode(handled.answer.result)
    assert answer["data"]["outcome"] == handled.answer.shadowed[1]
    return answer


async def dry_run(pool, workspace: str, content: str, tenant: str = "") -> str:
    cmd = server_save(workspace, content, dry_run=True)
    repo = MemoryRepository(pool, tenant)
    await DryRunning("create", CreateMemoryService(repo, Limits()), repo).run(cmd)
    return cmd.command_id


async def test_a_report_of_the_same_result_agrees_and_is_stored(pool):
    shadowed = await dry_run(pool, "1001", "likes tea")
    answer = await paired(pool, report(shadowed))
    assert answer["data"] == {"status": "recorded", "outcome": "agreed", "differences": []}
    row = await pool.fetchrow("SELECT outcome, bot_status, reported_at IS NOT NULL AS reported FROM shadow_pairs"
                              " WHERE command_id = $1", shadowed)
    assert tuple(row) == ("agreed", "memory_saved_successfully", True)


async def test_a_repeated_report_compares_again_and_stores_the_same(pool):
    shadowed = await dry_run(pool, "1001", "likes jam")
    differing = report(shadowed, result={"success": False, "data": {"status": "memory_save_failed_invalid_content"}})
    first = await paired(pool, differing)
    again = await paired(pool, differing)
    assert first["data"] == again["data"] and first["data"]["outcome"] == "differed"
    assert await pool.fetchval("SELECT count(*) FROM shadow_pairs WHERE command_id = $1", shadowed) == 1


async def test_no_dry_run_is_unpaired_and_a_timeout_is_never_compared(pool):
    assert (await paired(pool, report(uuid.uuid4().hex)))["data"]["outcome"] == "unpaired"
    shadowed = await dry_run(pool, "1001", "likes scones")
    timed_out = await paired(pool, report(shadowed, timed_out=True, result={"success": False}))
    assert timed_out["data"] == {"status": "recorded", "outcome": "timed_out", "differences": []}


async def test_another_kind_differs_on_the_kind(pool):
    shadowed = await dry_run(pool, "1001", "likes pie")
    answer = await paired(pool, report(shadowed, kind="update"))
    assert answer["data"]["outcome"] == "differed"
    assert answer["data"]["differences"] == [{"field": "kind", "worker": "create", "bot": "update"}]


async def refused(pool, cmd: ShadowReport, tenant: str = "") -> str:
    """The reason a report was refused with (nothing counted as a pair)."""
    handled = await ShadowReportService(MemoryRepository(pool, tenant)).run(cmd)
    assert handled.answer.shadowed is None and handled.answer.status == "memory_command_invalid"
    answer: dict[str, Any] = msgspec.json.decode(handled.answer.result)
    assert answer["success"] is False
    reason: str = answer["data"]["reason"]
    return reason


async def test_a_report_about_another_workspaces_or_bots_dry_run_is_refused_and_changes_nothing(pool):
    shadowed = await dry_run(pool, "1001", "likes cake", tenant="tomori")
    assert "another workspace or another bot" in await refused(pool, report(shadowed, workspace="1002"), "tomori")
    assert "another workspace or another bot" in await refused(pool, report(shadowed), tenant="kaede")
    row = await pool.fetchrow("SELECT tenant, workspace_id, outcome FROM shadow_pairs WHERE command_id = $1", shadowed)
    assert tuple(row) == ("tomori", "1001", None)
    assert (await paired(pool, report(shadowed), tenant="tomori"))["data"]["outcome"] == "agreed"


async def test_a_report_that_compares_nothing_is_stored_and_reported_as_such(pool):
    workspace = f"66{uuid.uuid4().int % 10**15:015d}"
    empty: dict[str, Any]
    for empty in ({}, {"data": {}}):
        shadowed = await dry_run(pool, workspace, f"likes tea {len(empty)}")
        answer = await paired(pool, report(shadowed, workspace=workspace, result=empty))
        assert answer["data"] == {"status": "recorded", "outcome": "nothing_compared", "differences": []}
    async with pool.acquire() as conn:
        shown = await build_report(conn, "", workspace=workspace)
    assert shown["totals"]["nothing_compared"] == 2 and shown["totals"]["agreed"] == 0
    assert "nothing_compared" in render(shown)


async def test_a_refused_credential_is_kept_and_shown_as_its_kind_from_either_side(pool):
    workspace = f"67{uuid.uuid4().int % 10**15:015d}"
    credential = CREDENTIALS[0]
    repo = MemoryRepository(pool)
    shadowed = await dry_run(pool, workspace, credential.content)
    # The bot has no guard: its own write saved the memory, and its result carries the text.
    own = await CreateMemoryService(repo, Limits(secret_guard_default=False)).run(
        server_save(workspace, credential.content))
    bot_result = msgspec.json.decode(own.answer.result)
    assert credential.secret in own.answer.result.decode()
    answer = await paired(pool, report(shadowed, workspace=workspace, result=bot_result))
    assert answer["data"]["outcome"] == "differed" and credential.secret not in str(answer)
    failed = await dry_run(pool, workspace, credential.content)
    await paired(pool, report(failed, workspace=workspace, result=None, error=f"rejected: {credential.content}"))
    rows = await pool.fetch("SELECT bot_result::text, bot_error, differences::text FROM shadow_pairs"
                            " WHERE command_id = ANY($1::text[])", [shadowed, failed])
    kept = " ".join(str(value) for row in rows for value in row)
    assert credential.secret not in kept and f"<credential withheld: {credential.kind}>" in kept
    async with pool.acquire() as conn:
        shown = await build_report(conn, "", workspace=workspace)
    assert shown["differences"] and shown["differences"][0]["intended"] == "secret_guard"
    for printed in (json.dumps(shown, default=str), render(shown)):
        assert credential.secret not in printed and credential.kind in printed


async def insert_for(pool, workspace: str, content: str) -> dict[str, Any]:
    """A write of the bot's own, outside the worker (its result, as the bot reports it)."""
    handled = await CreateMemoryService(MemoryRepository(pool), Limits()).run(server_save(workspace, content))
    assert handled.answer.status == "memory_saved_successfully"
    result: dict[str, Any] = msgspec.json.decode(handled.answer.result)
    return result


async def test_later_ids_are_concurrent_only_after_an_insert_of_the_same_owner(pool):
    here, elsewhere = (f"68{uuid.uuid4().int % 10**15:015d}" for _ in range(2))
    await insert_for(pool, here, "the workspace exists")
    # Another guild's insert takes the foreseen id: nothing this owner's rule saw changed.
    shadowed = await dry_run(pool, here, "likes tea")
    await insert_for(pool, elsewhere, "another guild's fact")
    answer = await paired(pool, report(shadowed, workspace=here, result=await insert_for(pool, here, "likes tea")))
    assert answer["data"]["outcome"] == "differed"
    assert "data.memory_id" in [d["field"] for d in answer["data"]["differences"]]
    # This guild's own insert came between: the pair is not comparable.
    shadowed = await dry_run(pool, here, "likes jam")
    await insert_for(pool, here, "a fact saved meanwhile")
    answer = await paired(pool, report(shadowed, workspace=here, result=await insert_for(pool, here, "likes jam")))
    assert answer["data"]["outcome"] == "concurrent"


async def test_what_a_pair_keeps_of_a_large_report_is_bounded(pool):
    workspace = f"69{uuid.uuid4().int % 10**15:015d}"
    shadowed = await dry_run(pool, workspace, "likes tea")
    fields = {f"field_{i}": "x" * 3_000 for i in range(20)}
    answer = await paired(pool, report(shadowed, workspace=workspace, result={**SAVED, "data": {**SAVED["data"],
                                                                                                 **fields}}))
    assert answer["data"]["outcome"] == "differed"
    row = await pool.fetchrow("SELECT octet_length(bot_result::text) AS result, octet_length(differences::text)"
                              " AS differences FROM shadow_pairs WHERE command_id = $1", shadowed)
    assert row["result"] < 200 and row["differences"] <= KEPT_DIFFERENCES_BYTES + 200
    assert answer["data"]["differences"][-1]["field"] == MORE_FIELD


async def test_a_dry_run_the_secret_guard_refused_is_marked_intended_and_keeps_no_secret(pool):
    credential = CREDENTIALS[0]
    secret = credential.secret
    shadowed = await dry_run(pool, "1001", credential.content)
    row = await pool.fetchrow("SELECT intended, dry_status, dry_result::text FROM shadow_pairs WHERE command_id = $1",
                              shadowed)
    assert (row["intended"], row["dry_status"]) == ("secret_guard", "memory_save_failed_invalid_content")
    assert secret not in row["dry_result"]
    answer = await paired(pool, report(shadowed))  # TomoriBot saved it
    assert answer["data"]["outcome"] == "differed"


async def test_a_dry_run_of_a_report_compares_and_stores_nothing(pool):
    shadowed = await dry_run(pool, "1001", "likes toast")
    cmd = msgspec.structs.replace(report(shadowed), dry_run=True)
    handled = await ShadowReportService(MemoryRepository(pool)).run(cmd)
    assert handled.dry and msgspec.json.decode(handled.answer.result)["data"]["outcome"] == "agreed"
    assert await pool.fetchval("SELECT outcome FROM shadow_pairs WHERE command_id = $1", shadowed) is None


@pytest.fixture
async def client_without_worker(own_nats):
    nc = await nats.connect(own_nats.url)
    await streams.provision_for(nc.jetstream(), nc, Settings.from_env({}), may_delete=True)
    client = await MemoryClient(nc).__aenter__()
    yield nc, client
    await client.__aexit__(None, None, None)
    await nc.drain()


async def reports_published(nc, workspace: str) -> list[dict[str, Any]]:
    js = nc.jetstream()
    sub = await js.pull_subscribe(f"cmd.*.shadow.{subjects.encode_token(workspace)}", stream=subjects.COMMANDS_STREAM)
    try:
        return [msgspec.json.decode(m.data) for m in await sub.fetch(2, timeout=10)]
    finally:
        await sub.unsubscribe()


async def test_an_unanswered_dry_run_times_out_and_the_bots_result_passes_through(client_without_worker):
    nc, client = client_without_worker
    workspace = f"77{uuid.uuid4().int % 10**15:015d}"
    cmd = server_save(workspace, "likes tea")

    async def own_write() -> dict[str, Any]:
        return SAVED_BY_BOT

    # Nobody answers the dry run: the call still returns, with the own write's value, and the
    # report says the dry run timed out (below).
    value = await client.shadowed("create", cmd, own_write, timeout=0.3)
    assert value is SAVED_BY_BOT

    async def failing_write() -> dict[str, Any]:
        raise RuntimeError("the bot's database is down")

    with pytest.raises(RuntimeError, match="database is down"):
        await client.shadowed("create", server_save(workspace, "likes jam"), failing_write, timeout=0.1)
    await client.shadow_reports_sent()
    published = await reports_published(nc, workspace)
    assert [(r["shadowed_id"], r["timed_out"]) for r in published][0] == (cmd.command_id, True)
    assert published[0]["result"]["data"]["status"] == "memory_saved_successfully"
    assert published[1]["result"] is None and published[1]["error"] == "the bot's database is down"


async def test_nothing_of_shadow_mode_reaches_the_bot(client_without_worker):
    """A command that cannot be built, or a report that cannot, is logged: the own write runs and
    its value stands."""
    _, client = client_without_worker

    async def own_write() -> dict[str, Any]:
        return SAVED_BY_BOT

    def broken_report(value: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("notice")

    workspace = f"78{uuid.uuid4().int % 10**15:015d}"
    assert await client.shadowed("create", {"workspace_id": workspace}, own_write, timeout=0.1) is SAVED_BY_BOT
    assert await client.shadowed("create", server_save(workspace, "likes tea"), own_write, reported=broken_report,
                                 timeout=0.1) is SAVED_BY_BOT
    nul = {"success": True, "data": {"status": "memory_saved_successfully", "reason": "a\x00b"}}
    assert await client.shadowed("create", server_save(workspace, "likes jam"), lambda: _value(nul),
                                 timeout=0.1) == nul
    await client.shadow_reports_sent()


async def _value(value: dict[str, Any]) -> dict[str, Any]:
    return value
