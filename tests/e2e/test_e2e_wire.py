"""Wire-contract details a bot relies on (docs/design.md, section 3): forward compatibility, string
ids, and subject tokens for ids that are not plain snowflakes."""

from __future__ import annotations

import msgspec

from contracts import subjects
from contracts.kinds.create import SAVED
from contracts.result_parts import COMMAND_INVALID
from tests.e2e.bus import command_payload, create_fields, encode, publish_command, read_stream, unique
from tests.e2e.directory import server_memories
from tests.support.directory import add_server


async def test_unknown_fields_are_ignored(e2e_worker, nc, inbox, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    cid = unique("future-")
    payload = command_payload(create_fields(ws, "likes tea"), command_id=cid, reply_to=inbox.subject(cid))
    payload["added_in_v2"] = {"anything": [1, 2, 3]}
    payload["persona"]["avatar_url"] = "https://example.invalid/a.png"
    payload["channel"]["thread_id"] = "130000000000000001"
    payload["retrieval"]["reranker"] = "r"

    await publish_command(nc, "create", ws, encode(payload), msg_id=cid)

    result = msgspec.json.decode((await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)])
    assert result["data"]["status"] == SAVED, result
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["likes tea"]


async def test_numeric_ids_are_an_invalid_command(e2e_worker, nc, inbox, bot_db):
    ws = unique()
    cid = unique("numeric-")
    payload = command_payload(create_fields(ws, "likes tea"), command_id=cid, reply_to=inbox.subject(cid))
    payload["workspace_id"] = int(ws)

    await publish_command(nc, "create", ws, encode(payload), msg_id=cid)

    result = msgspec.json.decode((await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)])
    assert result["data"]["status"] == COMMAND_INVALID, result
    assert "workspace_id" in result["data"]["reason"]
    assert await server_memories(bot_db, ws) == []


async def test_workspace_id_with_dots_travels_percent_encoded(e2e_worker, memory, bot_db, nc):
    ws = f"matrix.room-{unique()}"
    token = ws.replace(".", "%2E")
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, "the room is for chess"))

    assert result.data.status == SAVED, result
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["the room is for chess"]
    events = await read_stream(nc, subjects.EVENTS_STREAM, [f"cache.invalidate.tomori_state.{token}",
                                                            f"memory.saved.server.{token}"])
    assert [m.subject for m in events] == [f"cache.invalidate.tomori_state.{token}", f"memory.saved.server.{token}"]
    assert events[0].json()["key"] == ws
    assert events[1].json()["owner_id"] == ws and events[1].json()["workspace_id"] == ws
