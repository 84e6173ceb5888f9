"""One command id, one effect, one stored result (docs/design.md, section 2, guarantee 1).

A bot retries with the same command id. Inside JetStream's duplicate window the server drops
the repeat and the client asks the worker for the stored result; past it (or when an
operator replays from the DLQ with a new Nats-Msg-Id) the worker gets the command again and
its inbox answers with the stored result, changing nothing.
"""

from __future__ import annotations

import msgspec
import pytest

from contracts import subjects
from contracts.codec import encode
from contracts.kinds.create import DISABLED, SAVED, SAVED_WITH_EVICTION
from tests.e2e.bus import RAG, create_fields, read_stream, unique
from tests.e2e.directory import add_old_server_memories, processed_count, server_memories
from tests.support.directory import add_server
from worker.client.memory_client import new_create

LINEAGE = 3


@pytest.mark.parametrize("command_id", [None, "bot-7.turn 12/tool-call:α*>"], ids=["uuid", "odd-characters"])
async def test_same_command_id_twice_gives_one_row_and_identical_results(e2e_worker, memory, bot_db, command_id):
    ws = unique()
    await add_server(bot_db, ws)
    extra = {} if command_id is None else {"command_id": f"{command_id}{unique()}"}
    cmd = new_create(**create_fields(ws, "{user} collects stamps", lineage_id=LINEAGE),
                     reply_to=memory.reply_subject(), **extra)
    payload = encode(cmd)

    first = await memory.send_raw("create", ws, payload, command_id=cmd.command_id, reply_to=cmd.reply_to)
    # The bot retries exactly (same bytes, same Nats-Msg-Id): JetStream drops it as a duplicate.
    second = await memory.send_raw("create", ws, payload, command_id=cmd.command_id, reply_to=cmd.reply_to)

    first_result, second_result = msgspec.json.decode(first), msgspec.json.decode(second)
    assert first_result["data"]["status"] == SAVED, first_result
    assert first_result["command_id"] == cmd.command_id
    assert second_result == first_result
    rows = await server_memories(bot_db, ws)
    assert [(r["id"], r["content"]) for r in rows] == [(first_result["data"]["memory_id"], "{user} collects stamps")]
    assert await processed_count(bot_db, cmd.command_id) == 1


async def test_redelivered_command_is_answered_from_the_inbox(e2e_worker, memory, bot_db, nc):
    """Past the duplicate window (here: a new Nats-Msg-Id, as a DLQ replay sends), the worker
    sees the command again: it answers with the stored result even though the world changed."""
    ws = unique()
    await add_server(bot_db, ws)
    fields = create_fields(ws, "{user} runs marathons", lineage_id=LINEAGE)
    cmd = new_create(**fields, reply_to=memory.reply_subject())

    first = await memory.send_raw("create", ws, encode(cmd), command_id=cmd.command_id, reply_to=cmd.reply_to)
    # Were the command run again now, it would be refused.
    await add_server(bot_db, ws, self_teaching=False)
    again = msgspec.structs.replace(cmd, reply_to=memory.reply_subject())
    second = await memory.send_raw("create", ws, encode(again), command_id=f"{cmd.command_id}:replay-1",
                                   reply_to=again.reply_to)
    third = await memory.send_raw("create", ws, encode(again), command_id=f"{cmd.command_id}:replay-2",
                                  reply_to=again.reply_to)

    first_result = msgspec.json.decode(first)
    assert first_result["data"]["status"] == SAVED, first_result
    assert msgspec.json.decode(second) == first_result
    assert msgspec.json.decode(third) == first_result
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["{user} runs marathons"]
    assert await processed_count(bot_db, cmd.command_id) == 1
    # One effect, so one set of events: each event id stored once.
    events = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.saved_subject("server", ws),
                                                            subjects.invalidate_subject("tomori_state", ws)])
    assert sorted(str(m.msg_id) for m in events) == sorted(
        [f"{cmd.command_id}:saved", f"{cmd.command_id}:invalidate:tomori_state:{ws}"])


async def test_repeated_eviction_forgets_only_one_row(e2e_worker, memory, bot_db):
    """A save with eviction, delivered three times, replaces exactly one row."""
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True)
    ids = await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"legacy {d}", d) for d in (90, 80, 70, 60, 50)])
    cmd = new_create(**create_fields(ws, "fresh fact", lineage_id=LINEAGE, retrieval=RAG),
                     reply_to=memory.reply_subject())

    raws = []
    for attempt in range(3):
        raws.append(await memory.send_raw("create", ws, encode(cmd), command_id=f"{cmd.command_id}:{attempt}",
                                          reply_to=cmd.reply_to))

    results = [msgspec.json.decode(r) for r in raws]
    assert results[0]["data"]["status"] == SAVED_WITH_EVICTION, results[0]
    assert results[0]["data"]["content_forgotten"] == "legacy 90"
    assert results[1] == results[0] and results[2] == results[0]
    rows = await server_memories(bot_db, ws, LINEAGE)
    assert {r["id"] for r in rows} == set(ids[1:]) | {results[0]["data"]["memory_id"]}


async def test_a_refusal_is_stored_and_repeated_too(e2e_worker, memory, bot_db):
    """A refusal is a result like any other: a retry gets the same refusal, even after the
    condition that caused it went away (the model already relayed the first answer)."""
    ws = unique()
    await add_server(bot_db, ws, self_teaching=False)
    cmd = new_create(**create_fields(ws, "likes tea"), reply_to=memory.reply_subject())

    first = await memory.send_raw("create", ws, encode(cmd), command_id=cmd.command_id, reply_to=cmd.reply_to)
    await add_server(bot_db, ws, self_teaching=True)
    second = await memory.send_raw("create", ws, encode(cmd), command_id=f"{cmd.command_id}:replay",
                                   reply_to=cmd.reply_to)

    assert msgspec.json.decode(first)["data"]["status"] == DISABLED
    assert msgspec.json.decode(second) == msgspec.json.decode(first)
    assert await server_memories(bot_db, ws) == []
    assert await processed_count(bot_db, cmd.command_id) == 1
