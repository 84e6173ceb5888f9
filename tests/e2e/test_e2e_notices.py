"""Notice plans travel in the result and in memory.saved (docs/design.md, section 6)."""

from __future__ import annotations

import msgspec

from contracts import subjects
from contracts.kinds.create import SAVED, SAVED_WITH_EVICTION
from tests.e2e.bus import RAG, create_fields, read_stream, unique
from tests.e2e.directory import add_old_server_memories
from tests.support.directory import add_server


async def _notice_settings(bot_db, ws: str, **columns) -> None:
    sets = ", ".join(f"{name} = ${i + 2}" for i, name in enumerate(columns))
    await bot_db.execute(f"UPDATE servers SET {sets} WHERE server_disc_id = $1", ws, *columns.values())


async def test_minimal_notice_in_a_public_channel_goes_to_conversation_and_thought_log(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    await _notice_settings(bot_db, ws, thought_log_channel_id="777")
    result = await memory.create(create_fields(ws, "the server's motto is be kind"))
    notice = result.notice
    assert result.data.status == SAVED
    assert notice["key"] == "memory_update" and notice["verbosity"] == "minimal"
    assert notice["conversation"]["mode"] == "title" and notice["conversation"]["card"] is None
    assert notice["thought_log"]["channel_id"] == "777"
    assert any(f["value"] == "the server's motto is be kind" for f in notice["thought_log"]["card"]["fields"])


async def test_a_dm_never_mirrors_to_the_thought_log(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    await _notice_settings(bot_db, ws, thought_log_channel_id="777", tool_notice_hidden_keys=["memory_update"])
    result = await memory.create(create_fields(ws, "quiet fact", is_dm=True))
    assert result.notice["conversation"] is None and result.notice["thought_log"] is None
    assert result.notice["dropped_reason"] == "hidden_key_non_public_channel"


async def test_an_eviction_card_shows_both_contents_in_the_result_and_the_event(e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True)
    await add_old_server_memories(bot_db, server_id, 7, [(f"old fact {d}", d) for d in (90, 80, 70, 60, 50)])
    await _notice_settings(bot_db, ws, tool_notice_verbosity="verbose")

    result = await memory.create(create_fields(ws, "a fresh fact", retrieval=RAG))

    assert result.data.status == SAVED_WITH_EVICTION
    card = result.notice["conversation"]["card"]
    values = [f["value"] for f in card["fields"]]
    assert "a fresh fact" in values and "old fact 90" in values
    assert result.notice["title"] == "Memory saved (one forgotten to make room)"
    [saved] = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.saved_subject("server", ws)])
    assert msgspec.json.decode(saved.data)["notice"] == result.notice
