"""The shadow trial's verdict as `memoryctl shadow report` prints it, from pairs a real database
holds (dry runs of the worker's create service, reports of the bot's own writes): what keeps a
kind from being ready, named in text and --json, then a kind that is ready once the trial has
compared enough, every difference intended and every status it may reach seen."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import msgspec
import pytest

from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import ROOT
from tests.memoryctl import memoryctl as in_process
from tests.support.commands import shadow_command
from tests.support.secret_corpus import CREDENTIALS
from worker.cli.memoryctl import build_parser
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.shadow.service import DryRunning, ShadowReportService
from worker.kinds.shadow.verdict import KIND_STATUSES, NEEDS_A_FAILURE

from .helpers import server_save

SAVED: dict[str, Any] = {"success": True, "data": {"status": "memory_saved_successfully"}}
REACHABLE = [s for s in KIND_STATUSES["create"] if s not in NEEDS_A_FAILURE]


@pytest.fixture
async def pairs(database_url):
    pool = await create_pool(database_url, min_size=1, max_size=4)
    repo = MemoryRepository(pool)

    async def shadowed(workspace: str, content: str, **report: Any) -> None:
        cmd = server_save(workspace, content, dry_run=True)
        await DryRunning("create", CreateMemoryService(repo, Limits()), repo).run(cmd)
        handled = await ShadowReportService(repo).run(
            shadow_command(workspace, cmd.command_id, **{"result": SAVED, **report}))
        assert msgspec.json.decode(handled.answer.result)["data"]["status"] == "recorded"

    yield shadowed
    await pool.close()


async def report(database_url: str, workspace: str, *options: str) -> tuple[dict[str, Any], str]:
    env = dict(os.environ, DATABASE_URL=database_url, NATS_URL="nats://127.0.0.1:1", PYTHONPATH=str(ROOT),
               METRICS_PORT="0")
    argv = ["shadow", "report", "--workspace", workspace, *options]
    as_json, text = await in_process([*argv, "--json"], env), await in_process(argv, env)
    assert as_json.returncode == 0 == text.returncode, as_json.stderr + text.stderr
    return json.loads(as_json.stdout), text.stdout


def workspace() -> str:
    return f"71{uuid.uuid4().int % 10**15:015d}"


async def test_what_a_kind_misses_is_named_in_json_and_text(database_url, pairs):
    ws = workspace()
    for food in ("tea", "jam"):
        await pairs(ws, f"likes {food}")
    await pairs(ws, "likes pie", result={"success": False, "data": {"status": "memory_save_failed_limit_exceeded"}})
    await pairs(ws, "likes scones", timed_out=True)
    shown, text = await report(database_url, ws, "--min-pairs", "4")

    never_seen = [s for s in REACHABLE if s != "memory_saved_successfully"]
    assert shown["switch"] is False
    assert shown["verdicts"] == {"create": {"ready": False, "missing": [
        {"reason": "statuses_never_seen", "statuses": never_seen, "expected": len(REACHABLE)},
        {"reason": "unexplained_differences", "pairs": 1},
        {"reason": "too_few_pairs", "pairs": 3, "at_least": 4},
        {"reason": "not_measuring", "pairs": 1, "of": 4, "at_most": 0.05}]}}
    assert shown["not_shadowed"] == ["manual", "reinforce", "seed_bio", "update"]
    assert shown["rule"]["min_pairs"] == 4 and "memory_save_failed_db_error" in shown["rule"]["needs_a_failure"]

    lines = text.splitlines()
    first, *section = lines[:lines.index("")]  # the verdict comes first, before the counts
    assert first == "verdict: not yet: not every kind shadowed is ready", text
    said = " ".join(line.strip() for line in section)
    assert said.startswith(f"create: not ready: {len(never_seen)} of {len(REACHABLE)} statuses never seen"
                           f" ({', '.join(never_seen)}), 1 unexplained difference, 3 of at least 4 pairs compared,"
                           " 1 of 4 pairs measured nothing (at most 5%)"), text
    assert "not shadowed (no pair, not counted): manual, reinforce, seed_bio, update" in said
    assert max(map(len, section)) <= 120, text  # a long list of statuses wraps


async def test_a_kind_is_ready_when_every_difference_is_intended_and_every_status_it_may_reach_was_seen(
        database_url, pairs):
    ws = workspace()
    for food in ("tea", "jam", "pie"):
        await pairs(ws, f"likes {food}")
    # The secret guard refuses what the bot saved: a difference, on purpose, and its status seen.
    await pairs(ws, CREDENTIALS[0].content)
    unreachable = [s for s in REACHABLE if s not in ("memory_saved_successfully", "memory_save_failed_invalid_content")]
    not_expected = [option for status in unreachable for option in ("--not-expected", status)]

    shown, text = await report(database_url, ws, "--min-pairs", "4", *not_expected)
    assert shown["totals"]["differed"] == 1 and shown["differences"][0]["intended"] == "secret_guard"
    assert shown["verdicts"] == {"create": {"ready": True, "missing": []}} and shown["switch"] is True
    assert shown["rule"]["not_expected"] == sorted(unreachable)
    assert text.splitlines()[:2] == ["verdict: switch: every kind shadowed is ready", "  create: ready"], text

    # Without saying so, the statuses this trial never reached keep it from being ready.
    shown, _ = await report(database_url, ws, "--min-pairs", "4")
    assert shown["verdicts"]["create"]["missing"] == [
        {"reason": "statuses_never_seen", "statuses": unreachable, "expected": len(REACHABLE)}]


async def test_nothing_shadowed_is_no_verdict(database_url):
    shown, text = await report(database_url, workspace())
    assert shown["switch"] is False and shown["verdicts"] == {}
    assert text.splitlines()[-1] == "verdict: not yet: nothing shadowed"


def test_a_status_no_kind_answers_is_refused_and_named(capsys):
    with pytest.raises(SystemExit) as refused:
        build_parser().parse_args(["shadow", "report", "--not-expected", "memory_saved_sucessfully"])
    assert refused.value.code == 2
    assert "'memory_saved_sucessfully' is no status of a shadowed kind" in capsys.readouterr().err
