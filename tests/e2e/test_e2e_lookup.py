"""The result lookup through the running worker (docs/design.md, section 3.1): what became of a command, a
reply_to outside REPLY_SUBJECT_PREFIXES made visible, and lower-case percent-hex in tokens."""

from __future__ import annotations

import json

import jsonschema
import msgspec
import nats
import pytest

from contracts import subjects
from contracts.codec import encode
from contracts.kinds.create import SAVED
from contracts.schema import SCHEMA_DIR
from tests.e2e.bus import command_payload, create_fields, publish_command, unique
from tests.support.directory import add_server
from tests.support.waiting import wait_until
from worker.client.memory_client import (
    CommandDeadLettered,
    MemoryClient,
    ResultTimeout,
    lookup_outcome,
    lookup_result,
    new_create,
)

OUTCOME_SCHEMA = json.loads((SCHEMA_DIR / "lookup.outcome.schema.json").read_text())


async def test_a_processed_command_has_its_result_in_both_answers(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)
    result = await memory.create(create_fields(ws, "{user} keeps bees"))
    assert result.data.status == SAVED, result

    outcome = await lookup_outcome(nc, ws, result.command_id)
    assert (outcome.outcome, outcome.kind) == ("processed", "create")
    assert outcome.result == msgspec.to_builtins(result)
    jsonschema.validate(msgspec.to_builtins(outcome), OUTCOME_SCHEMA)
    # The original answer, for clients written before the outcome: the bare stored result.
    assert msgspec.json.decode(await lookup_result(nc, ws, result.command_id)) == outcome.result
    assert (await lookup_outcome(nc, ws, "never-sent-" + unique())).outcome == "unknown"


async def test_a_reply_to_outside_the_allowed_prefixes_is_dead_lettered_and_the_lookup_says_so(
        e2e_worker, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)
    cid = unique("private-")
    payload = encode(command_payload(create_fields(ws, "{user} sails"), command_id=cid, reply_to="bot.replies.1"))
    await publish_command(nc, "create", ws, payload, msg_id=cid)

    async def dead_lettered():
        outcome = await lookup_outcome(nc, ws, cid)
        return outcome if outcome is not None and outcome.outcome == "dead_lettered" else None

    await wait_until(dead_lettered, timeout=15)
    outcome = await dead_lettered()
    letter = outcome.dead_letter
    assert (letter.reason, letter.reply_to_allowed, letter.allowed_reply_prefixes) == (
        "invalid_command", False, ["_INBOX."])
    assert "reply_to must start with" in letter.error


async def test_a_client_under_a_private_inbox_prefix_hears_nothing_and_is_told_why_it_may_be(e2e_worker, nats_server,
                                                                                            bot_db, nc):
    """A bot whose permissions give it its own reply prefix, which the operator has not added
    to REPLY_SUBJECT_PREFIXES: the worker answers neither its command nor its lookups there
    (issue 35), and the client's timeout names that cause. A lookup from an allowed inbox says
    what became of the command."""
    ws = unique()
    await add_server(bot_db, ws)
    private = await nats.connect(nats_server.url, inbox_prefix=b"bot_inbox")
    cmd = new_create(**create_fields(ws, "{user} rows"))
    try:
        async with MemoryClient(private, timeout=3.0) as client:
            with pytest.raises(ResultTimeout, match=r"inbox bot_inbox\.\S+ is under none of the worker's REPLY_SUB"):
                await client.create(cmd)
    finally:
        await private.drain()
    outcome = await lookup_outcome(nc, ws, cmd.command_id)
    assert outcome is not None and outcome.dead_letter is not None
    assert (outcome.outcome, outcome.dead_letter.reason, outcome.dead_letter.reply_to_allowed) == (
        "dead_lettered", "invalid_command", False)
    assert "reply_to is not allowed" in str(CommandDeadLettered(outcome))


async def test_a_workspace_token_in_lower_case_hex_is_the_same_workspace(e2e_worker, memory, bot_db, nc):
    ws = f"dm.{unique()}"  # an id with a byte that is percent-encoded in subjects
    await add_server(bot_db, ws)
    lower = subjects.encode_token(ws).replace("%2E", "%2e")
    cmd = new_create(**create_fields(ws, "{user} paints"), reply_to=memory.reply_subject())
    sub = await nc.subscribe(cmd.reply_to)
    try:
        await nc.jetstream().publish(f"memory.create.{lower}", encode(cmd), headers={"Nats-Msg-Id": cmd.command_id},
                                     stream=subjects.COMMANDS_STREAM)
        reply = msgspec.json.decode((await sub.next_msg(timeout=20)).data)
    finally:
        await sub.unsubscribe()
    assert reply["data"]["status"] == SAVED, reply
    # The lookup takes either spelling too.
    subject = f"memory.result.{lower}.{subjects.encode_token(cmd.command_id)}"
    answer = await nc.request(subject, b'{"answer": "outcome"}', timeout=5)
    assert json.loads(answer.data)["outcome"] == "processed"
