"""memory.update over NATS against the running worker (issue 37, docs/design.md, section 8.4): a bot edits
and deletes memories with the model's update_long_term_memory arguments and gets TomoriBot's statuses
and texts; the result lookup answers the command; a consumer of MEMORY_EVENTS sees the invalidation
before memory.updated or memory.removed; a re-send of the same command is answered from the inbox,
changing nothing and publishing nothing again."""

from __future__ import annotations

import json

import msgspec
import pytest

from contracts import subjects
from contracts.codec import decode_update_reply
from contracts.events import CacheInvalidate, MemoryRemoved, MemoryUpdated
from contracts.kinds.update import MEMORY_UPDATED, UPDATE_ERROR, UPDATE_INVALID_ARGS, UPDATE_NOT_FOUND, UpdateResult
from contracts.result_parts import CacheKey, InvalidCommandResult
from tests.e2e.bus import command_payload, publish_command, read_stream, unique
from tests.e2e.directory import FAILING_INSERTS, add_old_server_memories, personal_memories, server_memories
from tests.support.commands import update_fields
from tests.support.directory import add_server, add_user
from worker.client.memory_client import lookup_outcome

LINEAGE = 19


def update(ws: str, memory_id: object, content: object, **extra) -> dict:
    return update_fields(ws, memory_id, content, lineage_id=LINEAGE, **extra)


def owner_events(scope: str, owner: str) -> list[str]:
    cache = "tomori_state" if scope == "server" else "user"
    return [subjects.invalidate_subject(cache, owner), subjects.updated_subject(scope, owner),
            subjects.removed_subject(scope, owner), subjects.saved_subject(scope, owner)]


async def test_a_bot_edits_and_deletes_a_server_memory_and_reads_tomoribots_answers(e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws)
    first, second = await add_old_server_memories(bot_db, server_id, LINEAGE, [("likes tea", 40), ("likes jazz", 40)])

    edited = await memory.update(update(ws, first, "{user} likes {{green}} tea"))
    deleted = await memory.update(update(ws, second, ""))
    missing = await memory.update(update(ws, second, "too late"))
    bad = await memory.update(update(ws, None, None, tool_args={"memory_id": "ID:24", "memory_content": "x"}))

    assert isinstance(edited, UpdateResult) and edited.success, edited
    assert (edited.message, edited.data.status, edited.data.scope, edited.data.content_saved) == (
        "Server memory updated successfully", MEMORY_UPDATED, "server_wide", "{user} likes green tea")
    assert edited.invalidated == [CacheKey("tomori_state", ws)]
    assert (deleted.message, deleted.data.content_deleted) == ("Server memory deleted successfully", "likes jazz")
    assert (missing.data.status, missing.error) == (UPDATE_NOT_FOUND, "Memory ID not found in this server")
    assert (bad.data.status, bad.error) == (
        UPDATE_INVALID_ARGS, "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'string'")
    assert [(r["id"], r["content"], r["source"]) for r in await server_memories(bot_db, ws)] == [
        (first, "{user} likes green tea", "legacy")]
    assert edited.notice is not None and edited.notice["embed"]["title_key"] == "genai.self_teach.server_memory_updated_title"

    # What became of the edit: the lookup answers with the same result.
    outcome = await lookup_outcome(nc, ws, edited.command_id)
    assert outcome is not None and (outcome.outcome, outcome.kind) == ("processed", "update")
    assert msgspec.convert(outcome.result, UpdateResult) == edited

    # A consumer of the events: the invalidation first, then the change, per command.
    seen: dict[str, list] = {}
    for msg in await read_stream(nc, subjects.EVENTS_STREAM, owner_events("server", ws)):
        seen.setdefault(msg.json()["command_id"], []).append(msg)
    assert set(seen) == {edited.command_id, deleted.command_id}
    inv, change = seen[edited.command_id]
    assert msgspec.json.decode(inv.data, type=CacheInvalidate).reason == "memory_updated"
    updated = msgspec.json.decode(change.data, type=MemoryUpdated)
    assert (change.subject, updated.content_before, updated.content, change.msg_id) == (
        subjects.updated_subject("server", ws), "likes tea", "{user} likes green tea", updated.event_id)
    inv, change = seen[deleted.command_id]
    gone = msgspec.json.decode(change.data, type=MemoryRemoved)
    assert (change.subject, gone.memory_id, gone.content) == (subjects.removed_subject("server", ws), second,
                                                              "likes jazz")


async def test_a_personal_edit_and_a_resend_answered_from_the_inbox(e2e_worker, memory, inbox, bot_db, nc):
    ws, mika = unique(), unique()
    await add_server(bot_db, ws)
    user_id = await add_user(bot_db, mika)
    memory_id = await bot_db.fetchval("INSERT INTO personal_memories (user_id, persona_lineage_id, content)"
                                      " VALUES ($1, 0, '{user} plays the violin') RETURNING personal_memory_id", user_id)
    fields = update(ws, memory_id, "{user} plays the viola", target="Mika",
                    member_matches=[{"id": mika, "display_name": "Mika", "username": "mika"}])
    payload = command_payload(fields, command_id=unique("update-"), reply_to=inbox.subject("first"))

    await publish_command(nc, "update", ws, msgspec.json.encode(payload), msg_id=payload["command_id"])
    first = (await inbox.wait_for([inbox.subject("first")]))[inbox.subject("first")]
    # The bot sends it again (a lost reply, say) under a new message id, so JetStream keeps it:
    # the worker's inbox answers it, with nothing applied or published a second time.
    await bot_db.execute("UPDATE personal_memories SET content = 'changed by hand' WHERE personal_memory_id = $1",
                         memory_id)
    again = {**payload, "reply_to": inbox.subject("again")}
    await publish_command(nc, "update", ws, msgspec.json.encode(again), msg_id=f"{payload['command_id']}:resend")
    second = (await inbox.wait_for([inbox.subject("again")]))[inbox.subject("again")]

    result = decode_update_reply(first)
    assert isinstance(result, UpdateResult)
    assert (result.data.status, result.data.target_user, result.message) == (
        MEMORY_UPDATED, "Mika", "Personal memory updated successfully")
    assert second == first
    assert [r["content"] for r in await personal_memories(bot_db, mika)] == ["changed by hand"]
    stream = await read_stream(nc, subjects.EVENTS_STREAM, owner_events("personal", mika))
    assert [m.subject for m in stream] == [subjects.invalidate_subject("user", mika),
                                           subjects.updated_subject("personal", mika)]


NUMBER = "\x01number\x01"  # written as the number JSON text of the test


@pytest.mark.parametrize(("parameter", "number", "error"), [
    ("memory_id", "1e400", "The 'memory_id' argument was missing or invalid."),
    ("memory_id", "-1e400", "The 'memory_id' argument was missing or invalid."),
    ("memory_id", "1" + "0" * 5000, "The 'memory_id' argument was missing or invalid."),
    ("memory_id", "123456789012345678901234567890", "The 'memory_id' argument was missing or invalid."),
    ("memory_content", "1e400", "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'number'"),
    ("target_user", "-1e400", "Invalid parameters: Parameter 'target_user' expected type 'string' but got 'number'"),
], ids=lambda v: v[:16])
async def test_any_number_json_allows_is_a_bad_argument(e2e_worker, inbox, bot_db, nc, parameter, number, error):
    """A number no double holds (JSON.parse's Infinity) or beyond a safe integer is the model's
    bad argument, answered in TomoriBot's words; the memory is left as it was."""
    ws = unique()
    server_id = await add_server(bot_db, ws)
    (memory_id,) = await add_old_server_memories(bot_db, server_id, LINEAGE, [("likes tea", 40)])
    cid = unique("update-beyond-")
    args = {"memory_id": memory_id, "memory_content": "likes green tea", parameter: NUMBER}
    payload = command_payload(update(ws, None, None, tool_args=args), command_id=cid, reply_to=inbox.subject(cid))
    data = json.dumps(payload).replace(json.dumps(NUMBER), number).encode()

    await publish_command(nc, "update", ws, data, msg_id=cid)
    refused = decode_update_reply((await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)])

    assert isinstance(refused, UpdateResult), refused
    assert (refused.data.status, refused.success, refused.error) == (UPDATE_INVALID_ARGS, False, error)
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["likes tea"]


async def test_an_update_that_cannot_be_read_is_refused_unapplied(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    refused = await memory.update(update(ws, 1, "\U0001f327" * 20_000))  # over the worker's MAX_COMMAND_BYTES
    assert isinstance(refused, InvalidCommandResult) and refused.data.status == "memory_command_invalid", refused
    assert "over the limit of 65536" in refused.data.reason
    assert await bot_db.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                 refused.command_id) == 0


async def test_an_update_the_worker_gives_up_on_is_answered_as_tomoribots_throw(e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws)
    (memory_id,) = await add_old_server_memories(bot_db, server_id, LINEAGE, [("likes tea", 40)])
    await bot_db.execute(FAILING_INSERTS)  # an edit to "permanent failure..." fails in the database

    failed = await memory.update(update(ws, memory_id, "permanent failure of a model edit"))

    assert (failed.data.status, failed.error, failed.data.reason) == (
        UPDATE_ERROR, "Error occurred while updating memory", "Error occurred while updating memory")
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["likes tea"]
    outcome = await lookup_outcome(nc, ws, failed.command_id)
    assert outcome is not None and outcome.outcome == "dead_lettered", outcome
