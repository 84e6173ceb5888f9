"""Commands of one workspace are processed in publish order (docs/design.md, section 2, guarantee 5).

The bot publishes without waiting for results; other workspaces' commands are interleaved
and land in the same or other partitions. Memory ids come from a sequence used inside the
locked transaction, so ids growing in publish order means processing in publish order.
"""

from __future__ import annotations

import msgspec

from contracts.kinds.create import SAVED
from tests.e2e.bus import command_payload, create_fields, encode, publish_command, unique
from tests.e2e.directory import server_memories
from tests.support.directory import add_server

MAIN_COMMANDS = 50
OTHERS = 5


async def test_one_workspace_in_publish_order_while_others_interleave(e2e_worker, nc, inbox, bot_db):
    main = unique()
    others = [unique() for _ in range(OTHERS)]
    for ws in (main, *others):
        await add_server(bot_db, ws)

    published: list[tuple[str, str, str]] = []  # (workspace, command id, content), in publish order
    for i in range(MAIN_COMMANDS):
        # Each save at its own lineage, so the cap of 5 never refuses one.
        batch = [(main, f"main fact {i:02d}", i + 1)]
        batch.append((others[i % OTHERS], f"other fact {i:02d}", i // OTHERS + 1))
        for ws, content, lineage in batch:
            cid = unique("cmd-")
            payload = command_payload(create_fields(ws, content, lineage_id=lineage),
                                      command_id=cid, reply_to=inbox.subject(cid))
            ack = await publish_command(nc, "create", ws, encode(payload), msg_id=cid)
            assert not ack.duplicate
            published.append((ws, cid, content))

    replies = await inbox.wait_for([inbox.subject(cid) for _, cid, _ in published], timeout=40.0)

    results = {cid: msgspec.json.decode(replies[inbox.subject(cid)]) for _, cid, _ in published}
    bad = {cid: r["data"]["status"] for cid, r in results.items() if r["data"]["status"] != SAVED}
    assert not bad, bad
    assert all(results[cid]["command_id"] == cid for _, cid, _ in published)

    main_sent = [(cid, content) for ws, cid, content in published if ws == main]
    main_ids = [results[cid]["data"]["memory_id"] for cid, _ in main_sent]
    assert main_ids == sorted(main_ids) and len(set(main_ids)) == MAIN_COMMANDS, main_ids
    rows = await server_memories(bot_db, main)
    assert [r["content"] for r in rows] == [content for _, content in main_sent]
    assert [r["id"] for r in rows] == main_ids

    for ws in others:
        sent = [(cid, content) for w, cid, content in published if w == ws]
        assert len(sent) == MAIN_COMMANDS // OTHERS
        rows = await server_memories(bot_db, ws)
        assert [r["content"] for r in rows] == [content for _, content in sent]
        assert [r["id"] for r in rows] == [results[cid]["data"]["memory_id"] for cid, _ in sent]
