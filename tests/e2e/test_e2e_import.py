"""TomoriBot's data import as `memory.manual` action `import`, over NATS (docs/design.md, section 8.1): the
command through MemoryClient against the running worker, its effect on the tables, and its events in
MEMORY_EVENTS as a cache node and a bot read them. The e2e worker caps memories at 5.
"""

from __future__ import annotations

import msgspec

from contracts import subjects
from contracts.events import CacheInvalidate, MemoryRemoved, MemorySaved
from contracts.kinds.manual import EMPTY_CONTENT, IMPORTED, LIMIT_REACHED, MANAGERS_ONLY, PRIVACY_BLOCKED
from contracts.result_parts import CacheKey
from tests.e2e.bus import unique
from tests.e2e.directory import personal_memories, processed_count, server_memories
from tests.e2e.test_e2e_panels import events_by_command, panel, sent_twice
from tests.support.directory import add_server, add_user

LINEAGE = 12


def importing(ws: str, entries: list[dict], strategy: str = "merge", **fields) -> dict:
    return panel(ws, "import", strategy=strategy, entries=entries, **fields)


async def test_a_merge_then_a_replace_publish_invalidate_then_removed_then_saved(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)

    merged = await memory.manual(importing(ws, [{"content": "{user} likes tea", "tags": ["drinks"]},
                                                {"content": "movie night is Friday"}]))
    again = await memory.manual(importing(ws, [{"content": " {user}  likes tea ", "tags": "drinks"},
                                               {"content": "rules are pinned", "tags": "rules, #general"}]))
    replaced = await memory.manual(importing(ws, [{"content": "fresh start", "tags": ["lore"]}], "replace"))

    assert (merged.data.status, len(merged.data.memory_ids), merged.data.removed_count) == (IMPORTED, 2, 0)
    assert (again.data.status, again.data.skipped_duplicates, len(again.data.memory_ids)) == (IMPORTED, 1, 1)
    assert (replaced.data.status, replaced.data.removed_count) == (IMPORTED, 3)
    assert all(r.invalidated == [CacheKey("tomori_state", ws)] for r in (merged, again, replaced))
    rows = await server_memories(bot_db, ws)
    assert [(r["id"], r["content"], r["source"], r["manually_written"]) for r in rows] == [
        (replaced.data.memory_ids[0], "fresh start", "import", True)]

    events = await events_by_command(nc, "server", ws)
    invalidate = subjects.invalidate_subject("tomori_state", ws)
    saved_subject, removed_subject = subjects.saved_subject("server", ws), subjects.removed_subject("server", ws)
    assert [m.subject for m in events[replaced.command_id]] == [invalidate] + [removed_subject] * 3 + [saved_subject]
    inv = msgspec.json.decode(events[replaced.command_id][0].data, type=CacheInvalidate)
    assert (inv.cache, inv.key, inv.reason) == ("tomori_state", ws, "memory_import")
    gone = [msgspec.json.decode(m.data, type=MemoryRemoved) for m in events[replaced.command_id][1:4]]
    assert [(g.memory_id, g.content, g.lineage_id) for g in gone] == list(zip(
        merged.data.memory_ids + again.data.memory_ids,
        ["{user} likes tea", "movie night is Friday", "rules are pinned"], [LINEAGE] * 3, strict=True))
    saved = msgspec.json.decode(events[replaced.command_id][4].data, type=MemorySaved)
    assert (saved.memory_id, saved.content, saved.source, saved.manually_written, saved.owner_id) == (
        replaced.data.memory_ids[0], "fresh start", "import", True, ws)
    assert [m.subject for m in events[again.command_id]] == [invalidate, saved_subject]


async def test_refusals_change_and_publish_nothing(e2e_worker, memory, bot_db, nc):
    ws, private = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, private, privacy=2)
    kept = await memory.manual(importing(ws, [{"content": "kept"}]))

    member = await memory.manual(importing(ws, [{"content": "x"}], "replace", actor=unique(), is_manager=False))
    blocked = await memory.manual(importing(ws, [{"content": "x"}], scope="personal", actor=private, lineage=0))
    too_many = await memory.manual(importing(ws, [{"content": f"n{n}"} for n in range(6)], "replace"))
    bad_entry = await memory.manual(importing(ws, [{"content": "ok"}, {"content": "  "}]))

    assert [(r.success, r.data.status) for r in (member, blocked, too_many, bad_entry)] == [
        (False, MANAGERS_ONLY), (False, PRIVACY_BLOCKED), (False, LIMIT_REACHED),
        (False, EMPTY_CONTENT)]
    assert (too_many.data.available, too_many.data.requested) == (5, 6)
    assert "Memory 2 of the import" in bad_entry.error
    assert set(await events_by_command(nc, "server", ws)) == {kept.command_id}
    assert await events_by_command(nc, "personal", private) == {}
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["kept"]
    assert await personal_memories(bot_db, private) == []


async def test_the_same_import_twice_has_one_effect(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)
    await memory.manual(importing(ws, [{"content": "old"}]))

    command_id, first, second = await sent_twice(memory, importing(ws, [{"content": "new", "tags": ["a"]}], "replace"))

    assert first == second and first["data"]["removed_count"] == 1
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["new"]
    assert await processed_count(bot_db, command_id) == 1
    assert [m.subject for m in (await events_by_command(nc, "server", ws))[command_id]] == [
        subjects.invalidate_subject("tomori_state", ws), subjects.removed_subject("server", ws),
        subjects.saved_subject("server", ws)]
