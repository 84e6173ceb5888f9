"""The secret guard end to end (docs/design.md, section 4.2): the suite's running worker, over
NATS, on real PostgreSQL. A create holding a credential of each kind the guard names is
refused with the kind in words, and so is an edit holding one written in each of the ways the
guard reads (tests/support/secret_corpus.py, `ONE_OF_EACH_SHAPE`); afterwards none of the credentials is in any table of the
database, in any message of MEMORY_COMMANDS (once the retention loop purged the acknowledged
commands), MEMORY_EVENTS or MEMORY_DLQ, in the worker's, NATS's or PostgreSQL's log, in the
result lookup's answer or in /metrics, and the metric counts the refusals by kind.
`memoryctl workspace set --secret-guard off` lets the same workspace save one."""

from __future__ import annotations

import json
import os

from contracts import subjects
from contracts.codec import encode
from contracts.kinds.create import INVALID_CONTENT, SAVED
from contracts.kinds.update import UPDATE_INVALID_CONTENT
from tests.conftest import ROOT
from tests.e2e.bus import commands_purged, create_fields, read_stream, unique
from tests.memoryctl import memoryctl
from tests.support.commands import update_fields
from tests.support.directory import add_server
from tests.support.scrape import get, samples, value
from tests.support.secret_corpus import CREDENTIALS, ONE_OF_EACH_SHAPE, Credential
from tests.support.waiting import wait_until
from worker.client.memory_client import lookup_outcome
from worker.domain.secret_guard import NAMES

ONE_OF_EACH = list({c.kind: c for c in CREDENTIALS}.values())


def needles(credential: Credential) -> set[bytes]:
    """What would give the credential away, as it would be written raw or inside JSON: the
    credential (its longest line: a key block's body), or where it is too short to be told
    from other digits (a PIN) the memory's text around it."""
    longest = max(credential.secret.splitlines(), key=len)
    text = longest if len(longest) >= 10 else credential.content
    return {text.encode(), json.dumps(text)[1:-1].encode()}


SHAPES = list(ONE_OF_EACH_SHAPE.values())
ALL = {needle: c.kind for c in [*ONE_OF_EACH, *SHAPES] for needle in needles(c)}


def holding(data: bytes, looked_for: dict[bytes, str] = ALL) -> list[str]:
    return sorted({kind for needle, kind in looked_for.items() if needle in data})


async def stream_messages(nc, stream: str) -> list[bytes]:
    """Every message the stream still holds, headers and payload."""
    return [repr(m.headers).encode() + m.data for m in await read_stream(nc, stream, [">"])]


async def tables_holding(pool, looked_for: dict[bytes, str] = ALL) -> list[tuple[str, str]]:
    tables = await pool.fetch("SELECT table_schema, table_name FROM information_schema.tables"
                              " WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')")
    found = []
    for t in tables:
        name = f'"{t["table_schema"]}"."{t["table_name"]}"'
        for needle, kind in looked_for.items():
            if await pool.fetchval(f"SELECT EXISTS (SELECT 1 FROM {name} r WHERE strpos(r::text, $1) > 0)",
                                   needle.decode()):
                found.append((name, kind))
    return found


async def test_a_refused_credential_leaves_nothing_behind(e2e_worker, memory, bot_db, nc, nats_server, pg_server):
    ws = unique()
    await add_server(bot_db, ws)
    before = await samples(e2e_worker.metrics_url)

    results = [await memory.create(create_fields(ws, c.content)) for c in ONE_OF_EACH]
    # The model's update takes the same guard: an edit holding one is refused, the row kept as it was.
    kept = await memory.create(create_fields(ws, "likes green tea"))
    assert kept.success and kept.data.memory_id is not None
    edited = [*ONE_OF_EACH[::4], *SHAPES]  # every way of writing one, as the model edits a memory
    edits = [await memory.update(update_fields(ws, kept.data.memory_id, c.content)) for c in edited]

    for credential, result in zip(ONE_OF_EACH, results):
        assert (result.success, result.data.status) == (False, INVALID_CONTENT), credential.kind
        assert NAMES[credential.kind] in result.data.reason and "must never be stored" in result.data.reason
        assert holding(encode(result)) == [], credential.kind
        outcome = await lookup_outcome(nc, ws, result.command_id)
        assert outcome is not None and outcome.outcome == "processed"
        assert holding(encode(outcome)) == []
    for credential, edit in zip(edited, edits):
        assert (edit.success, edit.data.status) == (False, UPDATE_INVALID_CONTENT), credential.kind
        assert NAMES[credential.kind] in (edit.data.reason or "") and holding(encode(edit)) == []
    assert await bot_db.fetch("SELECT content FROM server_memories m JOIN servers s USING (server_id)"
                              " WHERE s.server_disc_id = $1", ws) == [("likes green tea",)]

    # The metric: refusals by kind, and nothing else of them.
    after = await samples(e2e_worker.metrics_url)
    for kind in {c.kind for c in ONE_OF_EACH}:
        times = sum(1 for c in edited if c.kind == kind)
        assert value(after, "memory_secrets_refused_total", kind=kind) - \
            value(before, "memory_secrets_refused_total", kind=kind) == 1 + times, kind
    status, metrics_text = get(f"{e2e_worker.metrics_url}/metrics")
    assert status == 200 and holding(metrics_text.encode()) == []

    # The streams: the commands leave MEMORY_COMMANDS at the retention loop's next purge.
    await wait_until(lambda: commands_purged(nc, ws), timeout=15, interval=0.2,
                     what="the refused commands purged from MEMORY_COMMANDS")
    for stream in (subjects.COMMANDS_STREAM, subjects.EVENTS_STREAM, subjects.DLQ_STREAM):
        assert [holding(m) for m in await stream_messages(nc, stream) if holding(m)] == [], stream

    # Every table of the database, and every log.
    assert await tables_holding(bot_db) == []
    logs = {"worker": e2e_worker.log_path, "nats": nats_server.data_dir / "nats.log",
            "postgres": pg_server.data_dir / "postgres.log"}
    for name, path in logs.items():
        assert holding(path.read_bytes()) == [], name
    lines = [json.loads(line) for line in e2e_worker.log_text().splitlines() if line.startswith("{")]
    answered = {line.get("command_id"): line.get("status") for line in lines if line.get("event") == "command"}
    assert {answered.get(r.command_id) for r in results} == {INVALID_CONTENT}
    assert {answered.get(e.command_id) for e in edits} == {UPDATE_INVALID_CONTENT}


async def test_a_workspace_that_turned_the_guard_off_saves_it(e2e_worker, memory, bot_db, e2e_database_url, nc):
    ws = unique()
    await add_server(bot_db, ws)
    credential = next(c for c in CREDENTIALS if c.kind == "stripe_key")
    env = dict(os.environ, DATABASE_URL=e2e_database_url, NATS_URL="nats://127.0.0.1:1", PYTHONPATH=str(ROOT))

    done = await memoryctl(["workspace", "set", ws, "--secret-guard", "off"], env)
    assert done.returncode == 0, done
    saved = await memory.create(create_fields(ws, credential.content))
    assert saved.data.status == SAVED and saved.data.content_saved == credential.content
    # Where a saved credential goes, the searches of the test above find it: they can fail.
    found = {needle: credential.kind for needle in needles(credential)}
    assert ('"public"."server_memories"', "stripe_key") in await tables_holding(bot_db, found)
    events = await stream_messages(nc, subjects.EVENTS_STREAM)
    assert any(holding(m, found) for m in events)

    assert (await memoryctl(["workspace", "set", ws, "--secret-guard", "default"], env)).returncode == 0
    refused = await memory.create(create_fields(ws, credential.content + " (again)"))
    assert refused.data.status == INVALID_CONTENT
