"""The panels, reinforcement and bio seeds over NATS (issue 3, docs/design.md, section 8): each command
through MemoryClient against the running worker, and its events in MEMORY_EVENTS as a cache node
and a bot read them. The e2e worker caps memories at 5.
"""

from __future__ import annotations

import uuid

import msgspec

from contracts import subjects
from contracts.codec import encode
from contracts.events import CacheInvalidate, MemoryRemoved, MemorySaved
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED_WITH_EVICTION
from contracts.kinds.manual import ADDED, NOT_FOUND, PRIVACY_BLOCKED, REMOVED, TEACHING_DISABLED, UPDATED, ManualMemory
from contracts.kinds.reinforce import REINFORCED
from contracts.kinds.seed_bio import SEEDED, SKIPPED
from contracts.result_parts import COMMAND_INVALID, CacheKey, InvalidCommandResult
from tests.e2e.bus import RAG, create_fields, read_stream, unique
from tests.e2e.directory import add_old_server_memories, personal_memories, processed_count, server_memories
from tests.support.commands import as_command, manual_fields, seed_bio_fields
from tests.support.directory import add_proxy_identity, add_server, add_user

LINEAGE = 12
MANAGER = "130000000000000001"


def panel(ws: str, action: str, *, scope: str = "server", actor: str = MANAGER, is_manager: bool = True,
          lineage: int = LINEAGE, **fields) -> dict:
    return {"workspace_id": ws, **manual_fields(action=action, scope=scope, actor=actor, is_manager=is_manager,
                                                lineage_id=lineage, **fields)}


def owner_subjects(scope: str, owner: str) -> list[str]:
    cache = "tomori_state" if scope == "server" else "user"
    return [subjects.invalidate_subject(cache, owner), subjects.saved_subject(scope, owner),
            subjects.removed_subject(scope, owner), subjects.evicted_subject(scope, owner)]


async def events_by_command(nc, scope: str, owner: str) -> dict[str, list]:
    """The owner's events in stream order, grouped by the command that caused them."""
    grouped: dict[str, list] = {}
    for msg in await read_stream(nc, subjects.EVENTS_STREAM, owner_subjects(scope, owner)):
        grouped.setdefault(msg.json()["command_id"], []).append(msg)
    return grouped


async def test_server_add_edit_remove_publish_invalidate_then_saved_or_removed(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)

    added = await memory.manual(panel(ws, "add", content=" {user} likes tea ", tags="drinks, #kitchen"))
    edited = await memory.manual(panel(ws, "edit", memory_id=added.data.memory_id, content="{user} likes green tea"))
    removed = await memory.manual(panel(ws, "remove", memory_id=added.data.memory_id))

    assert [r.data.status for r in (added, edited, removed)] == [ADDED, UPDATED, REMOVED]
    assert all(r.invalidated == [CacheKey("tomori_state", ws)] for r in (added, edited, removed))
    memory_id = added.data.memory_id
    events = await events_by_command(nc, "server", ws)
    assert set(events) == {added.command_id, edited.command_id, removed.command_id}
    invalidate, saved_subject, removed_subject, _ = owner_subjects("server", ws)
    for result, second in [(added, saved_subject), (edited, saved_subject), (removed, removed_subject)]:
        msgs = events[result.command_id]
        assert [m.subject for m in msgs] == [invalidate, second], result.data.status
        inv = msgspec.json.decode(msgs[0].data, type=CacheInvalidate)
        assert (inv.cache, inv.key, inv.event_id) == ("tomori_state", ws, msgs[0].msg_id)
    saved = msgspec.json.decode(events[added.command_id][1].data, type=MemorySaved)
    assert (saved.memory_id, saved.content, saved.source, saved.manually_written) == (
        memory_id, "{user} likes tea", "manual", True)
    assert (saved.scope, saved.workspace_id, saved.owner_id, saved.lineage_id) == ("server", ws, ws, LINEAGE)
    resaved = msgspec.json.decode(events[edited.command_id][1].data, type=MemorySaved)
    assert (resaved.memory_id, resaved.content, resaved.manually_written) == (memory_id, "{user} likes green tea", True)
    gone = msgspec.json.decode(events[removed.command_id][1].data, type=MemoryRemoved)
    assert (gone.memory_id, gone.content, gone.owner_id, gone.lineage_id) == (
        memory_id, "{user} likes green tea", ws, LINEAGE)
    assert await server_memories(bot_db, ws) == []


async def test_personal_add_and_remove_publish_on_the_users_subjects(e2e_worker, memory, bot_db, nc):
    ws, me = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, me, privacy=1)  # partial privacy does not stop the panel

    added = await memory.manual(panel(ws, "add", scope="personal", actor=me, lineage=0, content="I love rain"))
    removed = await memory.manual(panel(ws, "remove", scope="personal", actor=me, lineage=0,
                                        memory_id=added.data.memory_id))

    assert (added.data.status, removed.data.status) == (ADDED, REMOVED)
    assert added.invalidated == [CacheKey("user", me)]
    events = await events_by_command(nc, "personal", me)
    invalidate, saved_subject, removed_subject, _ = owner_subjects("personal", me)
    assert [m.subject for m in events[added.command_id]] == [invalidate, saved_subject]
    assert [m.subject for m in events[removed.command_id]] == [invalidate, removed_subject]
    saved = msgspec.json.decode(events[added.command_id][1].data, type=MemorySaved)
    assert (saved.owner_id, saved.lineage_id, saved.content, saved.manually_written) == (me, 0, "I love rain", True)
    assert await personal_memories(bot_db, me) == []


async def test_refusals_publish_nothing(e2e_worker, memory, bot_db, nc):
    ws, private = unique(), unique()
    await add_server(bot_db, ws, self_teaching=False)
    await add_user(bot_db, private, privacy=2)

    blocked = await memory.manual(panel(ws, "add", scope="personal", actor=private, content="x"))
    disabled = await memory.manual(panel(ws, "add", actor=unique(), is_manager=False, content="x"))
    missing = await memory.manual(panel(ws, "remove", memory_id=10**12))

    assert blocked.data.status == PRIVACY_BLOCKED and blocked.success is False
    assert disabled.data.status == TEACHING_DISABLED and disabled.success is False
    assert missing.data.status == NOT_FOUND and missing.success is False
    assert await events_by_command(nc, "personal", private) == {}
    assert await events_by_command(nc, "server", ws) == {}
    assert await personal_memories(bot_db, private) == [] and await server_memories(bot_db, ws) == []


async def sent_twice(memory, fields: dict) -> tuple[str, dict, dict]:
    """A panel command sent, then sent again under a new Nats-Msg-Id, as an operator's replay
    sends it: the worker sees the repeat and answers from its inbox. The command id and both answers."""
    cmd = as_command(ManualMemory, fields["workspace_id"], fields, reply_to=memory.reply_subject())
    ws = cmd.workspace_id
    first = await memory.send_raw("manual", ws, encode(cmd), command_id=cmd.command_id, reply_to=cmd.reply_to)
    again = msgspec.structs.replace(cmd, reply_to=memory.reply_subject())
    second = await memory.send_raw("manual", ws, encode(again), command_id=f"{cmd.command_id}:replay",
                                   reply_to=again.reply_to)
    return cmd.command_id, msgspec.json.decode(first), msgspec.json.decode(second)


async def test_the_same_panel_command_twice_has_one_effect(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws)

    command_id, first_result, second_result = await sent_twice(
        memory, panel(ws, "add_batch", contents=["one", "two", "ONE"]))

    assert first_result["data"]["status"] == ADDED and first_result["data"]["skipped_duplicates"] == 1
    assert second_result == first_result
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["one", "two"]
    assert await processed_count(bot_db, command_id) == 1
    assert [m.subject for m in (await events_by_command(nc, "server", ws))[command_id]] == [
        subjects.invalidate_subject("tomori_state", ws)] + [subjects.saved_subject("server", ws)] * 2


async def test_reinforce_answers_its_count_and_publishes_nothing(e2e_worker, memory, bot_db, nc):
    ws, me = unique(), unique()
    await add_server(bot_db, ws)
    server_row = await memory.manual(panel(ws, "add", content="server fact"))
    personal_row = await memory.manual(panel(ws, "add", scope="personal", actor=me, lineage=0, content="global fact"))
    refs = [{"scope": "server", "memory_id": server_row.data.memory_id},
            {"scope": "personal", "memory_id": personal_row.data.memory_id},
            {"scope": "server", "memory_id": 10**12}]

    result = await memory.reinforce({"workspace_id": ws, "lineage_id": LINEAGE, "memories": refs})

    assert (result.success, result.data.status, result.data.count) == (True, REINFORCED, 2)
    assert result.invalidated == []
    counts = await bot_db.fetch(
        "SELECT reinforcement_count, last_reinforced_at IS NOT NULL FROM server_memories WHERE server_memory_id = $1"
        " UNION ALL SELECT reinforcement_count, last_reinforced_at IS NOT NULL FROM personal_memories"
        " WHERE personal_memory_id = $2", server_row.data.memory_id, personal_row.data.memory_id)
    assert [(r[0], r[1]) for r in counts] == [(1, True), (1, True)]
    server_events = await events_by_command(nc, "server", ws)
    user_events = await events_by_command(nc, "personal", me)
    assert result.command_id not in server_events and result.command_id not in user_events
    assert set(server_events) == {server_row.command_id} and set(user_events) == {personal_row.command_id}


async def test_seed_bio_seeds_once_then_skips_a_new_command_id(e2e_worker, memory, bot_db, nc):
    ws, host, proxy = unique(), unique(), f"pk:{uuid.uuid4()}"
    await add_server(bot_db, ws)
    await add_user(bot_db, host)
    await add_proxy_identity(bot_db, proxy, namespace_id=unique("ns-"), hosts=[host])
    fields = {"workspace_id": ws, **seed_bio_fields(proxy, "Nova.\n\n  Chases   storms.")}

    seeded = await memory.seed_bio(fields)
    skipped = await memory.seed_bio(fields)  # a fresh command id: still a no-op

    assert (seeded.success, seeded.data.status) == (True, SEEDED), seeded
    assert seeded.invalidated == [CacheKey("user", proxy)]
    assert (skipped.data.status, skipped.invalidated) == (SKIPPED, [])
    assert skipped.command_id != seeded.command_id and skipped.data.reason
    rows = await personal_memories(bot_db, proxy)
    assert [(r["id"], r["lineage_id"], r["content"], r["source"], r["manually_written"]) for r in rows] == [
        (seeded.data.memory_id, 0, "Nova. Chases storms.", "bio_seed", False)]
    events = await events_by_command(nc, "personal", proxy)
    assert set(events) == {seeded.command_id}
    assert [m.subject for m in events[seeded.command_id]] == [
        subjects.invalidate_subject("user", proxy), subjects.saved_subject("personal", proxy)]


async def test_a_model_save_at_the_cap_evicts_an_unprotected_row_never_the_protected_one(
        e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True, decay_days=30)
    ids = await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"old {a}", a) for a in (200, 150, 120, 100, 90)])
    # Re-saving the oldest row unchanged protects it.
    protected = await memory.manual(panel(ws, "edit", memory_id=ids[0], content="old 200"))

    saves = [await memory.create(create_fields(ws, f"fact {n}", lineage_id=LINEAGE, retrieval=RAG)) for n in range(5)]

    assert protected.data.status == UPDATED
    assert [s.data.status for s in saves] == [SAVED_WITH_EVICTION] * 4 + [LIMIT_EXCEEDED]
    assert [s.data.content_forgotten for s in saves[:4]] == ["old 150", "old 120", "old 100", "old 90"]
    rows = await server_memories(bot_db, ws, LINEAGE)
    assert len(rows) == 5
    assert [(r["id"], r["content"], r["manually_written"]) for r in rows if r["id"] == ids[0]] == [
        (ids[0], "old 200", True)]
    evicted = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.evicted_subject("server", ws)])
    assert sorted(m.json()["memory_id"] for m in evicted) == sorted(ids[1:])


async def test_a_panel_or_seed_refused_unapplied_comes_back_as_an_invalid_command_result(e2e_worker, memory,
                                                                                         bot_db, nc):
    """MemoryClient reads the worker's memory_command_invalid answer to the other kinds as the
    contract's InvalidCommandResult (it once failed to decode it). Here the command is within
    the contract (20,000 characters) but over the worker's size limit (MAX_COMMAND_BYTES, 64 KiB
    by default): 4-byte characters make it 80 kB. Nothing is applied or stored."""
    ws, proxy = unique(), f"pk:{uuid.uuid4()}"
    await add_server(bot_db, ws)
    big = "\U0001F327" * 20_000
    answers = [await memory.manual(panel(ws, "add", content=big)),
               await memory.seed_bio({"workspace_id": ws, **seed_bio_fields(proxy, big)})]
    for answer in answers:
        assert isinstance(answer, InvalidCommandResult), answer
        assert (answer.success, answer.data.status) == (False, COMMAND_INVALID)
        assert "over the limit of 65536" in answer.data.reason
        assert await processed_count(bot_db, answer.command_id) == 0
    assert await server_memories(bot_db, ws) == []
