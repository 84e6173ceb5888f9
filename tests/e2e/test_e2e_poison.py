"""Malformed commands never block their partition (docs/design.md, sections 2 guarantee 6, 3.2 and 9).

Each is dead-lettered at once with reason `invalid_command` on `dlq.<original subject>`;
one with a readable `reply_to` is answered with `memory_command_invalid` and a reason that
names what is wrong. The next valid command on the same subject is processed.
"""

from __future__ import annotations

import json

import msgspec

from contracts import subjects
from contracts.kinds.create import SAVED
from contracts.result_parts import COMMAND_INVALID
from tests.e2e.bus import command_payload, create_fields, encode, publish_command, read_stream, unique
from tests.e2e.directory import server_memories
from tests.support.directory import add_server


def assert_invalid(raw: bytes, command_id: str, field: str) -> None:
    result = msgspec.json.decode(raw)
    assert result["data"]["status"] == COMMAND_INVALID, result
    assert result["success"] is False
    assert result["command_id"] == command_id
    assert result["error"]
    assert field in result["data"]["reason"], result["data"]["reason"]


async def test_poison_is_dead_lettered_and_the_partition_moves_on(e2e_worker, nc, inbox, bot_db):
    ws, other_ws = unique(), unique()
    await add_server(bot_db, ws)
    await add_server(bot_db, other_ws)
    subject = subjects.command_subject("create", ws)

    garbage = b"\x00\xffthis is not JSON {"
    bad_envelope_id = unique("bad-envelope-")
    bad_envelope = encode(command_payload(create_fields(ws, "never saved"), command_id=bad_envelope_id,
                                          reply_to=inbox.subject(bad_envelope_id)) | {"issued_at": "last tuesday"})
    mismatch_id = unique("mismatch-")
    mismatch = encode(command_payload(create_fields(other_ws, "never saved either"), command_id=mismatch_id,
                                      reply_to=inbox.subject(mismatch_id)))
    valid_id = unique("valid-")
    valid = encode(command_payload(create_fields(ws, "saved after the poison"), command_id=valid_id,
                                   reply_to=inbox.subject(valid_id)))

    # Published back to back on the one subject, without waiting for anything in between.
    for msg_id, payload in ((unique("garbage-"), garbage), (bad_envelope_id, bad_envelope),
                            (mismatch_id, mismatch), (valid_id, valid)):
        await publish_command(nc, "create", ws, payload, msg_id=msg_id)

    replies = await inbox.wait_for([inbox.subject(c) for c in (bad_envelope_id, mismatch_id, valid_id)])

    assert_invalid(replies[inbox.subject(bad_envelope_id)], bad_envelope_id, "issued_at")
    assert_invalid(replies[inbox.subject(mismatch_id)], mismatch_id, "workspace_id")
    ok = msgspec.json.decode(replies[inbox.subject(valid_id)])
    assert ok["data"]["status"] == SAVED, ok
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["saved after the poison"]
    assert await server_memories(bot_db, other_ws) == []

    dead = await read_stream(nc, subjects.DLQ_STREAM, [subjects.dlq_subject(subject)])
    assert [m.data for m in dead] == [garbage, bad_envelope, mismatch]
    for m in dead:
        assert m.subject == f"dlq.memory.create.{ws}"
        assert m.headers.get("Dlq-Reason") == "invalid_command", m.headers
        assert m.headers.get("Dlq-Original-Subject") == subject
        assert m.headers.get("Dlq-Error")
        assert m.headers.get("Dlq-Deliveries") == "1"
        assert m.headers.get("Dlq-First-Failed-At")
    assert "issued_at" in dead[1].headers["Dlq-Error"]
    assert "workspace_id" in dead[2].headers["Dlq-Error"]
    # Only the valid command reached the inbox.
    assert await bot_db.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = ANY($1::text[])",
                                 [bad_envelope_id, mismatch_id, valid_id]) == 1


async def test_missing_required_field_is_named(e2e_worker, nc, inbox, bot_db):
    ws = unique()
    cid = unique("no-persona-")
    payload = command_payload(create_fields(ws, "x"), command_id=cid, reply_to=inbox.subject(cid))
    del payload["persona"]

    await publish_command(nc, "create", ws, encode(payload), msg_id=cid)

    raw = (await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)]
    assert_invalid(raw, cid, "persona")
    dead = await read_stream(nc, subjects.DLQ_STREAM, [subjects.dlq_subject(subjects.command_subject("create", ws))])
    assert len(dead) == 1 and dead[0].headers.get("Dlq-Reason") == "invalid_command"
    assert await server_memories(bot_db, ws) == []


async def test_wildcard_reply_to_is_dead_lettered(e2e_worker, nc, inbox, bot_db):
    """A reply_to that is no publishable subject (a wildcard) makes the envelope invalid; a
    later valid command on the same subject still runs."""
    ws = unique()
    cid = unique("wild-")
    bad = command_payload(create_fields(ws, "x"), command_id=cid, reply_to=f"{inbox.prefix}.*")
    valid_id = unique("valid-")
    valid = command_payload(create_fields(ws, "fine"), command_id=valid_id, reply_to=inbox.subject(valid_id))

    await publish_command(nc, "create", ws, encode(bad), msg_id=cid)
    await publish_command(nc, "create", ws, encode(valid), msg_id=valid_id)

    replies = await inbox.wait_for([inbox.subject(valid_id)])
    assert msgspec.json.decode(replies[inbox.subject(valid_id)])["data"]["status"] == SAVED
    dead = await read_stream(nc, subjects.DLQ_STREAM, [subjects.dlq_subject(subjects.command_subject("create", ws))])
    assert len(dead) == 1 and dead[0].headers.get("Dlq-Reason") == "invalid_command"
    assert "reply_to" in dead[0].headers.get("Dlq-Error", "")
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["fine"]


CUT = "\x01cut\x01"  # written as JSON.stringify writes a string cut mid-pair: a lone surrogate escape
HUGE = "\x01huge\x01"  # written as a number JSON allows and no double holds


def as_a_bot_writes(payload: dict) -> bytes:
    return (json.dumps(payload).replace(json.dumps(CUT), r'"likes tea \ud83d"')
            .replace(json.dumps(HUGE), "1" + "0" * 5000).encode())


async def test_what_json_parse_reads_is_read_and_answered(e2e_worker, nc, inbox, bot_db):
    """A lone surrogate escape is read as U+FFFD, so the command is applied; a number beyond a
    double in an envelope field is refused naming the field, and the refusal reaches the bot."""
    ws = unique()
    await add_server(bot_db, ws)
    cut_id, lineage_id, command_id_id = unique("cut-"), unique("huge-lineage-"), unique("huge-id-")
    cut = command_payload(create_fields(ws, CUT), command_id=cut_id, reply_to=inbox.subject(cut_id))
    huge_lineage = command_payload(create_fields(ws, "x", lineage_id=HUGE), command_id=lineage_id,
                                   reply_to=inbox.subject(lineage_id))
    # Nothing else to say who sent it: the refusal still goes to its reply subject.
    huge_command_id = {**command_payload(create_fields(ws, CUT), command_id="unused",
                                         reply_to=inbox.subject(command_id_id)), "command_id": HUGE}

    for msg_id, payload in ((cut_id, cut), (lineage_id, huge_lineage), (command_id_id, huge_command_id)):
        await publish_command(nc, "create", ws, as_a_bot_writes(payload), msg_id=msg_id)
    replies = await inbox.wait_for([inbox.subject(c) for c in (cut_id, lineage_id, command_id_id)])

    saved = msgspec.json.decode(replies[inbox.subject(cut_id)])
    assert (saved["data"]["status"], saved["data"]["content_saved"]) == (SAVED, "likes tea \ufffd"), saved
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["likes tea \ufffd"]
    assert_invalid(replies[inbox.subject(lineage_id)], lineage_id, "lineage_id")
    assert "out of range" in msgspec.json.decode(replies[inbox.subject(lineage_id)])["data"]["reason"]
    assert_invalid(replies[inbox.subject(command_id_id)], "", "command_id")
