"""Events in MEMORY_EVENTS (docs/design.md, sections 2 guarantee 4, 3.5 and 5), read as a cache node,
a bot and a metrics sink would: with their own consumers on the stream.

The worker stores a command's events in the stream before it replies, so once the result is
in, reading the stream from the start finds all of them.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from contracts import subjects
from contracts.events import CacheInvalidate, MemoryEvicted, MemoryEvictionMetric, MemorySaved
from contracts.kinds.create import DISABLED, LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from contracts.result_parts import CacheKey
from tests.e2e.bus import RAG, create_fields, read_stream, unique
from tests.e2e.directory import add_old_server_memories, eviction_metric_ids, server_memories
from tests.support.directory import add_server, add_user
from tests.support.waiting import wait_until
from worker.client.memory_client import new_create

LINEAGE = 11


def server_subjects(ws: str) -> list[str]:
    return [
        subjects.invalidate_subject("tomori_state", ws),
        subjects.saved_subject("server", ws),
        subjects.evicted_subject("server", ws),
    ]


def assert_each_once(events) -> None:
    counts = Counter(m.msg_id for m in events)
    assert None not in counts, "every event carries Nats-Msg-Id"
    assert all(n == 1 for n in counts.values()), counts


async def test_save_with_eviction_publishes_invalidate_first_then_evicted_and_saved(e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True, decay_days=30)
    ages = [61, 75, 60, 70, 65]  # the oldest is not the lowest id
    ids = await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"old {a}", a) for a in ages])

    result = await memory.create(create_fields(ws, "{user} switched to green tea", lineage_id=LINEAGE,
                                               retrieval=RAG))

    assert result.data.status == SAVED_WITH_EVICTION, result
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    cid, new_id, victim_id = result.command_id, result.data.memory_id, ids[1]

    events = await read_stream(nc, subjects.EVENTS_STREAM, server_subjects(ws))
    assert_each_once(events)
    by_id = {m.msg_id: m for m in events}
    assert set(by_id) == {f"{cid}:invalidate:tomori_state:{ws}", f"{cid}:saved", f"{cid}:evicted"}
    invalidate = by_id[f"{cid}:invalidate:tomori_state:{ws}"]
    saved, evicted = by_id[f"{cid}:saved"], by_id[f"{cid}:evicted"]
    assert invalidate.seq < evicted.seq and invalidate.seq < saved.seq
    assert (invalidate.subject, saved.subject, evicted.subject) == tuple(server_subjects(ws))

    inv = msgspec.json.decode(invalidate.data, type=CacheInvalidate)
    assert (inv.event_id, inv.command_id, inv.cache, inv.key) == (invalidate.msg_id, cid, "tomori_state", ws)
    assert inv.reason and inv.occurred_at

    sv = msgspec.json.decode(saved.data, type=MemorySaved)
    assert sv.event_id == saved.msg_id and sv.command_id == cid and sv.occurred_at
    assert (sv.scope, sv.workspace_id, sv.owner_id, sv.lineage_id) == ("server", ws, ws, LINEAGE)
    assert (sv.memory_id, sv.content, sv.source, sv.manually_written) == (
        new_id, "{user} switched to green tea", "model", False)
    assert sv.evicted is not None
    assert (sv.evicted.memory_id, sv.evicted.content) == (victim_id, "old 75")

    ev = msgspec.json.decode(evicted.data, type=MemoryEvicted)
    assert ev.event_id == evicted.msg_id and ev.command_id == cid and ev.occurred_at
    assert (ev.scope, ev.owner_id, ev.lineage_id) == ("server", ws, LINEAGE)
    assert (ev.memory_id, ev.content_forgotten, ev.replaced_by, ev.decay_days) == (victim_id, "old 75", new_id, 30)

    # The metric travels without content or ids; its event id is only in Nats-Msg-Id, and
    # opaque: nothing in it names the command, the workspace or the content.
    [metric_id] = await eviction_metric_ids(bot_db, cid)
    assert cid not in metric_id and ws not in metric_id
    metrics = [m for m in await read_stream(nc, subjects.EVENTS_STREAM, [subjects.METRIC_EVICTION_SUBJECT])
               if m.msg_id == metric_id]
    assert len(metrics) == 1
    assert metrics[0].json() == {"scope": "server", "decay_days": 30}
    msgspec.json.decode(metrics[0].data, type=MemoryEvictionMetric)
    assert metrics[0].seq > invalidate.seq


async def test_plain_save_publishes_invalidate_then_saved_and_no_eviction(e2e_worker, memory, bot_db, nc):
    ws = unique()
    await add_server(bot_db, ws, decay=True, decay_days=45)

    result = await memory.create(create_fields(ws, "the server's motto is 'tea first'", lineage_id=LINEAGE,
                                               retrieval=RAG))

    assert result.data.status == SAVED, result
    cid = result.command_id
    events = await read_stream(nc, subjects.EVENTS_STREAM, server_subjects(ws))
    assert_each_once(events)
    assert [(m.subject, m.msg_id) for m in events] == [
        (subjects.invalidate_subject("tomori_state", ws), f"{cid}:invalidate:tomori_state:{ws}"),
        (subjects.saved_subject("server", ws), f"{cid}:saved"),
    ]
    saved = msgspec.json.decode(events[1].data, type=MemorySaved)
    assert saved.memory_id == result.data.memory_id
    assert saved.evicted is None
    metrics = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.METRIC_EVICTION_SUBJECT])
    assert not [m for m in metrics if m.msg_id and m.msg_id.startswith(f"{cid}:")]


async def test_personal_save_invalidates_the_user_cache(e2e_worker, memory, bot_db, nc):
    ws, dana = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, dana)

    result = await memory.create(create_fields(
        ws, "{user} is learning Japanese", scope="target_user", target="Dana", lineage_id=LINEAGE,
        member_matches=[{"id": dana, "display_name": "Dana", "username": "dana"}]))

    assert result.data.status == SAVED, result
    assert result.invalidated == [CacheKey("user", dana)]
    cid = result.command_id
    events = await read_stream(nc, subjects.EVENTS_STREAM, [
        subjects.invalidate_subject("user", dana), subjects.saved_subject("personal", dana),
        subjects.evicted_subject("personal", dana), *server_subjects(ws)])
    assert_each_once(events)
    assert [(m.subject, m.msg_id) for m in events] == [
        (subjects.invalidate_subject("user", dana), f"{cid}:invalidate:user:{dana}"),
        (subjects.saved_subject("personal", dana), f"{cid}:saved"),
    ]
    saved = msgspec.json.decode(events[1].data, type=MemorySaved)
    assert (saved.scope, saved.workspace_id, saved.owner_id, saved.memory_id) == (
        "personal", ws, dana, result.data.memory_id)


async def test_a_refusal_publishes_nothing(e2e_worker, memory, bot_db, nc):
    """Refusals decided before the database (disabled) and under the owner lock (at the cap)
    leave no event behind; a later save of the same workspace publishes only its own."""
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=False)
    await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"old {i}", 90) for i in range(5)])

    at_cap = await memory.create(create_fields(ws, "one too many", lineage_id=LINEAGE, retrieval=RAG))
    await add_server(bot_db, ws, self_teaching=False)
    disabled = await memory.create(create_fields(ws, "not now", lineage_id=LINEAGE + 1))
    await add_server(bot_db, ws, self_teaching=True)
    saved = await memory.create(create_fields(ws, "room here", lineage_id=LINEAGE + 1))

    assert at_cap.data.status == LIMIT_EXCEEDED, at_cap
    assert disabled.data.status == DISABLED, disabled
    assert saved.data.status == SAVED, saved
    events = await read_stream(nc, subjects.EVENTS_STREAM, server_subjects(ws))
    assert [(m.subject, m.msg_id) for m in events] == [
        (subjects.invalidate_subject("tomori_state", ws), f"{saved.command_id}:invalidate:tomori_state:{ws}"),
        (subjects.saved_subject("server", ws), f"{saved.command_id}:saved"),
    ]
    refused_ids = {at_cap.command_id, disabled.command_id}
    assert not {m.json()["command_id"] for m in events} & refused_ids


async def test_events_follow_the_commit_and_precede_the_result(e2e_worker, memory, bot_db, nc):
    """Section 4 step 9: after commit, the events stored with the inbox row are published (cache.invalidate first),
    then the result. One subscription sees everything in the order the server delivered it,
    as a bot that is also a cache node would."""
    ws = unique()
    await add_server(bot_db, ws)
    invalidate_subject = subjects.invalidate_subject("tomori_state", ws)
    saved_subject = subjects.saved_subject("server", ws)
    reply_to = memory.reply_subject()
    seen: list[tuple[str, bytes]] = []
    rows_when_saved: list[list] = []

    async def on_message(msg) -> None:
        if msg.subject in (invalidate_subject, saved_subject, reply_to):
            seen.append((msg.subject, msg.data))
        if msg.subject == saved_subject:
            # Published after commit: the row is visible to anyone by then.
            rows_when_saved.append([r["id"] for r in await server_memories(bot_db, ws)])

    everything = await nc.subscribe(">", cb=on_message)
    try:
        command = new_create(**create_fields(ws, "{user} brews tea at five", lineage_id=LINEAGE),
                             reply_to=reply_to)
        result = await memory.create(command)
        await wait_until(lambda: len(seen) >= 3 and rows_when_saved, timeout=5.0)
    finally:
        await everything.unsubscribe()

    assert result.data.status == SAVED, result
    assert [s for s, _ in seen] == [invalidate_subject, saved_subject, reply_to]
    assert rows_when_saved == [[result.data.memory_id]]

    # The command's inbox row, the one write besides the memory row, holds what its answer and
    # events are rendered from for a repeat or a redelivery (its decision and what the save
    # learned under the lock), neither the events nor the result.
    stored = await bot_db.fetchrow("SELECT events, result, decision ->> 'decided' AS decided, facts::text AS facts"
                                   " FROM processed_commands WHERE command_id = $1", result.command_id)
    assert (stored["events"], stored["result"], stored["decided"]) == (None, None, "save")
    assert msgspec.json.decode(stored["facts"]) == {"outcome": "saved", "memory_id": result.data.memory_id}

