"""The dead-letter round trip: a command that keeps failing lands in MEMORY_DLQ with its
headers; once the fault is fixed, `memoryctl dlq replay` applies it exactly once."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys

import msgspec
import pytest
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.kinds.create import DB_ERROR, SAVED
from tests.e2e.bus import Inbox, command_payload, create_fields, encode, publish_command, unique
from tests.e2e.directory import processed_count, server_memories
from tests.e2e.test_e2e_delivery import FAIL_SWITCH
from tests.support.directory import add_server
from tests.support.waiting import wait_until
from worker.cli import dlq as dlq_cli
from worker.cli.memoryctl import main as memoryctl
from worker.consuming import dead_letters


def _args(action: str, *seqs: int, all_: bool = False, reason: str | None = None, dry_run: bool = False,
          yes: bool = False):
    return argparse.Namespace(command="dlq", action=action, seqs=list(seqs), seq=seqs[0] if seqs else None,
                              all=all_, reason=reason, dry_run=dry_run, yes=yes)


async def _letters_for(js, ws: str) -> list[dead_letters.DeadLetter]:
    original = subjects.command_subject("create", ws)
    return [d async for d in dead_letters.entries(js) if d.original_subject == original]


async def test_dead_letter_then_replay_applies_it_exactly_once(e2e_worker, nc, nats_server, bot_db):
    js = nc.jetstream()
    ws = unique()
    content = f"dead then replayed {ws}"
    await add_server(bot_db, ws)
    await bot_db.execute(FAIL_SWITCH)
    await bot_db.execute("INSERT INTO e2e_fail_switch VALUES ($1)", content)
    inbox = await Inbox(nc).start()
    cid = unique("dlq-")
    payload = encode(command_payload(create_fields(ws, content), command_id=cid, reply_to=inbox.subject(cid)))
    await publish_command(nc, "create", ws, payload, msg_id=cid)
    reply = (await inbox.wait_for([inbox.subject(cid)], timeout=30))[inbox.subject(cid)]
    assert msgspec.json.decode(reply)["data"]["status"] == DB_ERROR

    [letter] = await _letters_for(js, ws)
    assert letter.reason == "max_deliver_exhausted"
    assert letter.deliveries == 3
    assert letter.payload == payload
    assert letter.command_id == cid
    assert {"Dlq-Reason", "Dlq-Error", "Dlq-Deliveries", "Dlq-Original-Subject",
            "Dlq-First-Failed-At"} <= set(letter.headers)

    lines: list[str] = []
    assert await dlq_cli.run(_args("list", reason="max_deliver_exhausted"), nats_server.url, lines.append) == 0
    assert any(str(letter.seq) in line and letter.original_subject in line for line in lines)
    lines.clear()
    assert await dlq_cli.run(_args("replay", letter.seq, dry_run=True), nats_server.url, lines.append) == 0
    assert await server_memories(bot_db, ws) == [] and len(await _letters_for(js, ws)) == 1

    await bot_db.execute("DELETE FROM e2e_fail_switch WHERE content = $1", content)  # the fault is fixed
    lines.clear()
    assert await dlq_cli.run(_args("replay", letter.seq), nats_server.url, lines.append) == 0
    assert "replayed 1 dead letter(s): 1 max_deliver_exhausted" in lines[-1]
    # What became of it: the command it is now, that it left the queue, where its result is asked.
    [became] = [line for line in lines if line.startswith(f"replayed {letter.seq}: ")]
    head = f"replayed {letter.seq}: republished to {letter.original_subject} as command {cid} (MEMORY_COMMANDS seq "
    assert became.startswith(head), became
    assert int(became.removeprefix(head).split(",")[0]) > (letter.command_seq or 0)
    assert f"Nats-Msg-Id {cid}:replay:{letter.seq}:" in became
    assert became.endswith("; left the dead-letter queue; its result: the bot's reply subject, or a lookup request"
                           f" on {subjects.result_subject(ws, cid)}"), became

    async def applied():
        return len(await server_memories(bot_db, ws)) == 1 and await processed_count(bot_db, cid) == 1

    await wait_until(applied, timeout=15)
    assert await _letters_for(js, ws) == []
    # The replay reused the reply subject: the bot hears the real outcome this time.
    reply_subject = inbox.subject(cid)
    await wait_until(lambda: len(inbox.replies[reply_subject]) == 2, timeout=15)
    second = inbox.replies[reply_subject][1]
    assert msgspec.json.decode(second)["data"]["status"] == SAVED

    # Replaying a command that was in fact applied changes nothing: the inbox answers it.
    await js.publish(subjects.dlq_subject(letter.original_subject), payload,
                     headers={"Dlq-Reason": "max_deliver_exhausted",
                              "Dlq-Original-Subject": letter.original_subject},
                     stream=subjects.DLQ_STREAM)
    [again] = await _letters_for(js, ws)
    assert await dlq_cli.run(_args("replay", again.seq), nats_server.url, lambda _: None) == 0
    await wait_until(lambda: len(inbox.replies[reply_subject]) == 3, timeout=15)
    assert inbox.replies[reply_subject][2] == second
    assert len(await server_memories(bot_db, ws)) == 1
    await inbox.stop()


async def _garbage_dead_lettered(nc, js):
    """A create that is not JSON, published to a fresh workspace, and its dead letter once stored."""
    ws = unique()
    await publish_command(nc, "create", ws, b"not json at all", msg_id=unique("garbage-"))

    async def dead():
        return len(await _letters_for(js, ws)) == 1

    await wait_until(dead, timeout=10)
    [letter] = await _letters_for(js, ws)
    return ws, letter


async def test_drop_and_show(e2e_worker, nc, nats_server):
    js = nc.jetstream()
    ws, letter = await _garbage_dead_lettered(nc, js)
    lines: list[str] = []
    assert await dlq_cli.run(_args("show", letter.seq), nats_server.url, lines.append) == 0
    assert "  Dlq-Reason: invalid_command" in lines
    assert any("not JSON" in line for line in lines)
    assert await dlq_cli.run(_args("drop", letter.seq, yes=True), nats_server.url, lines.append) == 0
    assert await _letters_for(js, ws) == []
    assert await dlq_cli.run(_args("show", letter.seq), nats_server.url, lines.append) == 1


def test_the_cli_refuses_seqs_with_all(capsys):
    with pytest.raises(SystemExit) as exit_:
        memoryctl(["dlq", "replay", "3", "--all"])
    assert exit_.value.code == 2
    assert "not allowed with argument SEQ" in capsys.readouterr().err


async def test_dlq_list_shows_the_error_and_replay_does_not_offer_a_command_refused_as_sent(e2e_worker, nc,
                                                                                          nats_server,
                                                                                          e2e_database_url):
    from tests.conftest import worker_env
    from tests.memoryctl import memoryctl as ctl

    js = nc.jetstream()
    ws, letter = await _garbage_dead_lettered(nc, js)
    env = worker_env(nats_server.url, e2e_database_url)

    listed = await ctl(["dlq", "list", "--reason", "invalid_command"], env)
    [line] = [line for line in listed.stdout.splitlines() if line.split()[0] == str(letter.seq)]
    assert line.split()[-1] != "-" and " ".join(letter.error.split())[:40] in line, listed.stdout
    assert listed.stdout.splitlines()[0].split()[-1] == "error"
    as_json = await ctl(["dlq", "list", "--reason", "invalid_command", "--json"], env)
    [entry] = [e for e in json.loads(as_json.stdout) if e["seq"] == letter.seq]
    assert (entry["original_subject"], entry["reason"], entry["error"]) == (letter.original_subject,
                                                                            "invalid_command", letter.error)
    assert entry["dead_lettered_at"] == letter.dead_lettered_at.isoformat()

    everything = await ctl(["dlq", "replay", "--all", "--reason", "invalid_command", "--dry-run"], env)
    assert f"would replay {letter.seq}:" not in everything.stdout
    assert f"cannot replay {letter.seq}: it was refused as sent (invalid_command" in everything.stdout
    assert everything.returncode == 1
    forced = await ctl(["dlq", "replay", str(letter.seq), "--include-invalid", "--dry-run"], env)
    assert (forced.returncode, f"would replay {letter.seq}:" in forced.stdout) == (0, True), forced
    assert len(await _letters_for(js, ws)) == 1  # dry runs: still there
    assert (await ctl(["dlq", "drop", "--yes", str(letter.seq)], env)).returncode == 0


async def test_drop_asks_on_the_terminal_and_a_no_keeps_every_letter(e2e_worker, nc, nats_server, e2e_database_url):
    from tests.conftest import worker_env
    from tests.support.terminal_session import on_terminal

    js = nc.jetstream()
    (_, first), (_, second) = await _garbage_dead_lettered(nc, js), await _garbage_dead_lettered(nc, js)
    env = worker_env(nats_server.url, e2e_database_url)

    session = await asyncio.to_thread(on_terminal, ["dlq", "drop", str(first.seq), str(second.seq)], env)
    shown = await asyncio.to_thread(session.read_until, "[y/N] ")
    session.type("n")
    code, seen = await asyncio.to_thread(session.finish)

    assert "2 dead letter(s) to drop:" in shown and f"  {first.seq}: {first.original_subject}" in shown, shown
    assert f"  {second.seq}: {second.original_subject} (invalid_command)" in shown, shown
    assert (code, "nothing dropped" in seen) == (1, True), seen
    assert [await _still_there(js, letter) for letter in (first, second)] == [True, True]

    session = await asyncio.to_thread(on_terminal, ["dlq", "drop", str(first.seq), str(second.seq)], env)
    await asyncio.to_thread(session.read_until, "[y/N] ")
    session.type("y")
    code, seen = await asyncio.to_thread(session.finish)

    assert (code, "dropped 2 dead letter(s): 2 invalid_command" in seen) == (0, True), seen
    assert [await _still_there(js, letter) for letter in (first, second)] == [False, False]


async def test_drop_without_a_terminal_refuses_unless_yes_and_a_dry_run_deletes_nothing(e2e_worker, nc, nats_server,
                                                                                      e2e_database_url):
    from tests.conftest import ROOT, worker_env

    js = nc.jetstream()
    _, letter = await _garbage_dead_lettered(nc, js)
    before = [d.seq async for d in dead_letters.entries(js)]
    env = worker_env(nats_server.url, e2e_database_url)

    def piped(*argv: str) -> subprocess.CompletedProcess:  # a script's run: no terminal anywhere
        return subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", *argv], cwd=ROOT, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)

    refused = await asyncio.to_thread(piped, "dlq", "drop", "--all")
    assert refused.returncode == 2, refused
    assert f"refusing to drop {len(before)} dead letter(s): no terminal to confirm on. Add --yes" in refused.stdout
    dry = await asyncio.to_thread(piped, "dlq", "drop", "--all", "--dry-run")
    assert dry.returncode == 0 and f"  {letter.seq}: {letter.original_subject} (invalid_command)" in dry.stdout, dry
    assert f"dry run: {len(before)} dead letter(s) would be dropped, nothing deleted" in dry.stdout
    assert [d.seq async for d in dead_letters.entries(js)] == before

    dropped = await asyncio.to_thread(piped, "dlq", "drop", "--yes", str(letter.seq))
    assert (dropped.returncode, await _still_there(js, letter)) == (0, False), dropped


async def _still_there(js, letter: dead_letters.DeadLetter) -> bool:
    try:
        await dead_letters.get(js, letter.seq)
    except NotFoundError:
        return False
    return True
