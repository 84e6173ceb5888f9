"""What the result lookup says about a command (worker/consuming/lookup/outcomes.py), on a real nats-server with
the worker's streams and no worker consuming them (so a command stays queued), and a real
PostgreSQL inbox."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import msgspec
import nats
import pytest
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.codec import encode
from contracts.kinds.create import CommandResult, ResultData
from contracts.lookup import OUTCOME_DECODER, wants_outcome
from contracts.schema import SCHEMA_DIR
from db.repository import MemoryRepository
from tests.conftest import unique
from tests.integration.helpers import server_save
from tests.support.commands import envelope
from tests.support.waiting import wait_until
from worker.client.memory_client import CommandDeadLettered, MemoryClient, ResultTimeout
from worker.consuming import dead_letters
from worker.consuming.administration import streams
from worker.consuming.lookup.answer import ResultLookups
from worker.consuming.lookup.outcomes import CommandOutcomes

OUTCOME_SCHEMA = json.loads((SCHEMA_DIR / "lookup.outcome.schema.json").read_text())


@pytest.fixture
async def nc(own_nats):
    client = await nats.connect(own_nats.url)
    yield client
    await client.drain()


@pytest.fixture
async def js(nc):
    js = nc.jetstream()
    for config in (streams.command_stream(4), streams.dlq_stream()):
        await streams.ensure_stream(js, config)
    return js


@pytest.fixture
def outcomes(pool, js):
    return CommandOutcomes(MemoryRepository(pool), js, ("_INBOX.",))


def command(workspace: str, command_id: str, reply_to: str | None = None) -> bytes:
    return msgspec.json.encode(envelope(workspace, command_id=command_id, reply_to=reply_to))


async def describe(outcomes: CommandOutcomes, workspace_token: str, command_id: str) -> dict:
    raw = await outcomes.describe(workspace_token, subjects.encode_token(command_id))
    body = json.loads(raw)
    jsonschema.validate(body, OUTCOME_SCHEMA)
    OUTCOME_DECODER.decode(raw)
    return body


async def test_a_command_nobody_has_seen_is_unknown(outcomes):
    ws = unique()
    assert await describe(outcomes, ws, "never-sent") == {"command_id": "never-sent", "workspace_id": ws,
                                                          "outcome": "unknown"}


async def test_a_stored_command_not_yet_processed_is_queued(outcomes, js):
    ws, cid = unique(), unique("c-")
    await js.publish(subjects.command_subject("manual", ws), command(ws, cid), stream=subjects.COMMANDS_STREAM)
    await js.publish(subjects.command_subject("create", ws), command(ws, "other"), stream=subjects.COMMANDS_STREAM)
    assert await describe(outcomes, ws, cid) == {"command_id": cid, "workspace_id": ws, "outcome": "queued",
                                                 "kind": "manual"}
    # Another workspace's command of the same id is not this one's.
    assert (await describe(outcomes, unique(), cid))["outcome"] == "unknown"


async def test_a_queued_command_under_a_lower_case_token_is_found_under_that_token(outcomes, js):
    ws, cid = f"ws.{unique()}", unique("c-")
    lower = subjects.encode_token(ws).replace("%2E", "%2e")
    await js.publish(f"memory.create.{lower}", command(ws, cid), stream=subjects.COMMANDS_STREAM)
    assert (await describe(outcomes, lower, cid))["outcome"] == "queued"


async def test_a_processed_command_answers_its_stored_result_even_while_a_copy_is_queued(outcomes, js, pool):
    ws, cid = unique(), unique("c-")
    result = encode(CommandResult(command_id=cid, success=True, message="Memory saved successfully",
                                  data=ResultData(status="memory_saved_successfully", memory_id=5)))
    await pool.execute("INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)"
                       " VALUES ($1, 'create', $2, 'memory_saved_successfully', $3::jsonb)", cid, ws, result.decode())
    await js.publish(subjects.command_subject("create", ws), command(ws, cid), stream=subjects.COMMANDS_STREAM)
    body = await describe(outcomes, ws, cid)
    assert (body["outcome"], body["kind"]) == ("processed", "create")
    assert body["result"] == json.loads(result)


async def test_a_dead_lettered_command_says_why_and_whether_its_reply_to_was_allowed(outcomes, js, nc):
    ws, cid = unique(), unique("c-")
    original = subjects.command_subject("seed_bio", ws)
    for seq, (reason, reply_to) in enumerate([(dead_letters.EXHAUSTED, "_INBOX.a.b"),
                                              (dead_letters.INVALID_COMMAND, "bot.private.1")], start=1):
        await dead_letters.dead_letter(js, max_payload=nc.max_payload, original_subject=original,
                                       payload=command(ws, cid, reply_to), reason=reason, error=f"attempt {seq}", deliveries=seq,
                                       stream_seq=int(unique()))
    body = await describe(outcomes, ws, cid)
    assert (body["outcome"], body["kind"]) == ("dead_lettered", "seed_bio")
    letter = body["dead_letter"]
    # The latest dead letter of the command is the one that counts.
    assert (letter["reason"], letter["error"], letter["deliveries"]) == ("invalid_command", "attempt 2", 2)
    assert letter["reply_to_allowed"] is False and letter["allowed_reply_prefixes"] == ["_INBOX."]
    assert letter["dead_lettered_at"]


async def test_one_read_answers_several_commands_and_a_read_stopped_early_says_so(pool, js, nc):
    ws, letter, queued = unique(), unique("c-"), unique("c-")
    await dead_letters.dead_letter(js, max_payload=nc.max_payload, original_subject=subjects.command_subject("create", ws),
                                   payload=command(ws, letter), reason=dead_letters.EXHAUSTED, error="gone",
                                   deliveries=3, stream_seq=int(unique()))
    for _ in range(3):  # garbage after it: more dead letters than the read takes
        await dead_letters.dead_letter(js, max_payload=nc.max_payload, original_subject=subjects.command_subject("create", ws),
                                       payload=b"garbage", reason=dead_letters.INVALID_COMMAND, error="not json",
                                       deliveries=1, stream_seq=int(unique()))
    await js.publish(subjects.command_subject("manual", ws), command(ws, queued), stream=subjects.COMMANDS_STREAM)
    tokens = [subjects.encode_token(cid) for cid in (letter, queued, "never-sent")]

    whole = await CommandOutcomes(MemoryRepository(pool), js, ("_INBOX.",)).describe_many(ws, tokens)
    read = {token: json.loads(raw) for token, raw in whole.items()}
    assert [read[token]["outcome"] for token in tokens] == ["dead_lettered", "queued", "unknown"]
    assert not any("partial" in body for body in read.values())

    stopped = await CommandOutcomes(MemoryRepository(pool), js, ("_INBOX.",), scan_limit=2).describe_many(ws, tokens)
    read = {token: json.loads(raw) for token, raw in stopped.items()}
    for body in read.values():
        jsonschema.validate(body, OUTCOME_SCHEMA)
    assert [(read[token]["outcome"], read[token]["partial"]) for token in tokens] == [
        ("dead_lettered", True), ("queued", True), ("unknown", True)]


def test_only_an_outcome_request_gets_the_outcome():
    assert wants_outcome(b'{"answer": "outcome"}')
    for body in (b"", b"null", b"{}", b'{"answer": "result"}', b"not json", b'{"answer": "outcome", "x": 1}'):
        assert not wants_outcome(body), body


class Recording(CommandOutcomes):
    """The real outcomes, remembering what each lookup answered."""

    answers: list[str]

    async def describe_many(self, workspace_token: str, command_tokens) -> dict[str, bytes]:
        answers = await super().describe_many(workspace_token, command_tokens)
        self.answers += [json.loads(raw)["outcome"] for raw in answers.values()]
        return answers


async def stored_copies(js, workspace: str) -> list[dict]:
    """The command stream's messages of this workspace: their Nats-Msg-Id headers."""
    found: list[dict] = []
    seq = 1
    while True:
        try:
            raw = await js.get_msg(subjects.COMMANDS_STREAM, seq, subject=f"cmd.*.*.{workspace}", next=True)
        except NotFoundError:
            return found
        found.append(raw.headers or {})
        seq = raw.seq + 1


async def test_memory_client_waits_while_queued_gives_up_on_invalid_and_resends_the_unknown(js, nc, pool):
    """MemoryClient's retry decisions, with the lookup answering and no worker processing."""
    repo = MemoryRepository(pool)
    recording = Recording(repo, js, ("_INBOX.",))
    recording.answers = []
    result_lookups = ResultLookups(repo, recording)
    result_lookups.start()
    lookups = await nc.subscribe(subjects.RESULT_LOOKUP_SUBJECTS, cb=result_lookups.on_lookup)
    ws = unique()
    try:
        async with MemoryClient(nc, timeout=0.3) as client:
            # Queued: the first send times out; the re-send is a duplicate, and the client waits
            # (asking the lookup) rather than queueing a second copy, until the result is stored.
            cmd = server_save(ws, "{user} waits")
            with pytest.raises(ResultTimeout):
                await client.create(cmd)
            resend = asyncio.create_task(client.create(cmd, timeout=20))
            await wait_until(lambda: recording.answers.count("queued") >= 2, timeout=10)
            stored = CommandResult(command_id=cmd.command_id, success=True, message="Memory saved successfully",
                                   data=ResultData(status="memory_saved_successfully", memory_id=9))
            await pool.execute("INSERT INTO processed_commands (command_id, kind, workspace_id, status, result)"
                               " VALUES ($1, 'create', $2, 'memory_saved_successfully', $3::jsonb)",
                               cmd.command_id, ws, encode(stored).decode())
            assert await resend == stored
            assert [h.get("Nats-Msg-Id") for h in await stored_copies(js, ws)] == [cmd.command_id]

            # Dead-lettered as invalid: a re-send would be refused the same way, so the client gives up.
            bad = server_save(ws, "{user} is refused")
            with pytest.raises(ResultTimeout):
                await client.create(bad)
            await js.purge_stream(subjects.COMMANDS_STREAM, subject=f"cmd.*.*.{ws}")
            await dead_letters.dead_letter(js, max_payload=nc.max_payload,
                                           original_subject=subjects.command_subject("create", ws),
                                           payload=encode(bad), reason=dead_letters.INVALID_COMMAND,
                                           error="workspace_id does not match", deliveries=1, stream_seq=int(unique()))
            with pytest.raises(CommandDeadLettered, match="invalid_command"):
                await client.create(bad)

            # Unknown (stored once, then gone without a trace): sent again under a new message id.
            lost = server_save(ws, "{user} was lost")
            with pytest.raises(ResultTimeout):
                await client.create(lost)
            await js.purge_stream(subjects.COMMANDS_STREAM, subject=f"cmd.*.*.{ws}")
            with pytest.raises(ResultTimeout):
                await client.create(lost)
            [copy] = await stored_copies(js, ws)
            assert copy["Nats-Msg-Id"].startswith(f"{lost.command_id}:resend:")
    finally:
        await lookups.unsubscribe()
        await result_lookups.aclose()
