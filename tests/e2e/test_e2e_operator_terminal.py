"""What a bot, its model or a bridged chat user wrote reaches the operator's terminal as text,
never as terminal commands: `memoryctl` run as an operator runs it (a process on the suite's
worker, NATS and database) prints ESC, BEL, C1 controls and bidi overrides as visible escapes,
and cuts a huge value instead of widening every row of a table."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import msgspec

from contracts import subjects
from tests.conftest import ROOT, unique, worker_env
from tests.e2e.bus import Inbox, command_payload, create_fields, encode, publish_command
from tests.support.commands import shadow_fields
from tests.support.directory import add_server
from tests.support.waiting import wait_until
from worker.consuming import dead_letters

# Clears the screen, writes the clipboard (OSC 52), retitles the window (C1 OSC), then reverses
# what follows: each would act on the terminal printed raw.
HOSTILE = "\x1b[2J\x1b]52;c;Y3VybCBldmlsLnNo\x07 \x9d0;owned\x9c \u202eevil\u2066"
RAW = ("\x1b", "\x07", "\x9d", "\x9c", "\u202e", "\u2066")
SHOWN = "\\x1b[2J\\x1b]52;c;Y3VybCBldmlsLnNo\\x07 \\x9d0;owned\\x9c \\u202eevil\\u2066"


def operator(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def assert_nothing_raw(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done
    found = {f"U+{ord(ch):04X}" for ch in RAW if ch in done.stdout}
    assert found == set(), done.stdout[:2000]


async def test_memories_list_shows_a_saved_memory_s_controls_as_escapes(e2e_worker, nc, nats_server, bot_db,
                                                                     e2e_database_url):
    ws = unique()
    await add_server(bot_db, ws)
    inbox = await Inbox(nc).start()
    cid = unique("hostile-")
    content = f"{HOSTILE} remember this"
    await publish_command(nc, "create", ws, encode(command_payload(create_fields(ws, content), command_id=cid,
                                                                   reply_to=inbox.subject(cid))), msg_id=cid)
    reply = (await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)]
    assert msgspec.json.decode(reply)["success"], reply

    listed = await asyncio.to_thread(operator, worker_env(nats_server.url, e2e_database_url),
                                     "memories", "list", "--workspace", ws)

    assert_nothing_raw(listed)
    [row] = [line for line in listed.stdout.splitlines() if "\\x1b[2J" in line]
    assert row.endswith("…") and SHOWN.startswith(row.split("  ")[-1][:-1]), row  # cut to 60, marked


async def test_dlq_list_and_show_escape_a_bot_chosen_subject_and_payload(e2e_worker, nc, nats_server,
                                                                        e2e_database_url):
    ws = unique()
    subject = f"memory.create.{ws}{HOSTILE.replace(' ', '')}"
    # Valid UTF-8 JSON is printed formatted, its strings as sent: C1 and bidi survive JSON.
    payload = json.dumps({"command_id": "\x9b2J", "note": "\u202eevil"}, ensure_ascii=False).encode()
    await nc.jetstream().publish(subject, payload, headers={"Nats-Msg-Id": unique("hostile-")},
                                 stream=subjects.COMMANDS_STREAM)
    js = nc.jetstream()
    found: list[dead_letters.DeadLetter] = []

    async def dead_lettered() -> bool:
        found[:] = [d async for d in dead_letters.entries(js) if ws in d.original_subject]
        return bool(found)

    await wait_until(dead_lettered, timeout=20)
    env = worker_env(nats_server.url, e2e_database_url)

    listed = await asyncio.to_thread(operator, env, "dlq", "list")
    shown = await asyncio.to_thread(operator, env, "dlq", "show", str(found[0].seq))

    assert_nothing_raw(listed)
    assert_nothing_raw(shown)
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(f"{found[0].seq:>6}  ")]
    assert f" memory.create.{ws}\\x1b[2J… " in row, row  # escaped, then cut to its column
    assert "\\x9b2J" in shown.stdout and "\\u202eevil" in shown.stdout, shown.stdout
    assert f"Dlq-Original-Subject: memory.create.{ws}\\x1b[2J" in shown.stdout, shown.stdout


async def test_shadow_report_escapes_a_reported_status_and_bounds_its_table(e2e_worker, memory, nats_server, bot_db,
                                                                          e2e_database_url):
    ws = unique()
    huge = "x" * 20_000
    for status in (HOSTILE, huge):  # reports with no dry run: the bot's status is the row's
        await memory.shadow({"workspace_id": ws, **shadow_fields(
            unique("bot-"), result={"success": False, "data": {"status": status}})})
    await bot_db.execute("INSERT INTO servers (server_disc_id) VALUES ($1) ON CONFLICT DO NOTHING", ws)

    async def own_write() -> dict:  # the bot's write, reported with a status and a field of its choosing
        return {"success": True, "data": {"status": HOSTILE, f"note{HOSTILE}": 1}}

    await memory.shadowed("create", create_fields(ws, "tea"), own_write, timeout=20.0)
    await memory.shadow_reports_sent()

    async def differed() -> bool:
        return await bot_db.fetchval("SELECT count(*) FROM memory_worker.shadow_pairs WHERE workspace_id = $1"
                                     " AND outcome = 'differed'", ws) == 1

    await wait_until(differed, timeout=20)
    env = worker_env(nats_server.url, e2e_database_url)

    report = await asyncio.to_thread(operator, env, "shadow", "report", "--workspace", ws)
    as_json = await asyncio.to_thread(operator, env, "shadow", "report", "--workspace", ws, "--json")

    assert_nothing_raw(report)
    assert max(map(len, report.stdout.splitlines())) < 200, report.stdout[:500]
    assert SHOWN.replace(" ", "")[:20] in report.stdout.replace(" ", ""), report.stdout
    assert "most frequent differences" in report.stdout and "data.note\\x1b[2J" in report.stdout, report.stdout
    assert_nothing_raw(as_json)
    statuses = {row["status"] for row in json.loads(as_json.stdout)["by_status"]}
    assert HOSTILE in statuses  # --json keeps every value whole, as JSON escapes
    assert huge not in statuses and any(s.startswith("<not kept: 20000 bytes") for s in statuses)  # a pair is bounded
