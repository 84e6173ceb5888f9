"""Capacity and eviction through the running worker (docs/design.md, sections 2 guarantees 2-3, and 5).

Caps are 5 here (the e2e worker runs with MAX_SERVER_MEMORIES=5, MAX_PERSONAL_MEMORIES=5).
The concurrent cases send one user's personal saves from workspaces on every partition, so
they really run in parallel and only the owner lock keeps the count.
"""

from __future__ import annotations

import asyncio
import itertools

import msgspec

from contracts import subjects
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from tests.e2e.bus import RAG, create_fields, read_stream, unique
from tests.e2e.directory import (
    add_old_personal_memories,
    add_old_server_memories,
    eviction_metric_ids,
    personal_memories,
    server_memories,
    set_reinforced,
)
from tests.support.directory import add_server, add_user
from tests.support.partitions import partition_of

LINEAGE = 9
PARTITIONS = 4  # MEMORY_PARTITIONS of the e2e worker


def workspaces_on_every_partition(per_partition: int = 2) -> list[str]:
    by_partition: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for _ in itertools.count():
        ws = unique()
        bucket = by_partition[partition_of(subjects.encode_token(ws), PARTITIONS)]
        if len(bucket) < per_partition:
            bucket.append(ws)
        if all(len(b) == per_partition for b in by_partition.values()):
            return [ws for b in by_partition.values() for ws in b]
    raise AssertionError("unreachable: itertools.count() never ends")


def personal_save(ws: str, user: str, content: str, **kw):
    return create_fields(ws, content, scope="target_user", target="Pat", lineage_id=kw.pop("lineage_id", LINEAGE),
                         member_matches=[{"id": user, "display_name": "Pat", "username": "pat"}], **kw)


async def test_concurrent_personal_saves_never_exceed_the_cap(e2e_worker, memory, bot_db):
    user = unique()
    await add_user(bot_db, user)
    spaces = workspaces_on_every_partition()
    for ws in spaces:
        await add_server(bot_db, ws)

    results = await asyncio.gather(*(
        memory.create(personal_save(ws, user, f"fact {i}"))
        for i, ws in enumerate(spaces * 3)
    ))

    statuses = sorted(r.data.status for r in results)
    assert statuses == sorted([SAVED] * 5 + [LIMIT_EXCEEDED] * (len(results) - 5)), statuses
    rows = await personal_memories(bot_db, user)
    assert len(rows) == 5
    assert {r["id"] for r in rows} == {r.data.memory_id for r in results if r.success}
    for refused in (r for r in results if not r.success):
        assert (refused.data.current_count, refused.data.max_allowed) == (5, 5)
        assert "/personal memories" in refused.data.reason


async def test_concurrent_saves_at_the_boundary_let_exactly_one_in(e2e_worker, memory, bot_db):
    """Users one below the cap get a save from every partition at once: exactly one fits."""
    spaces = workspaces_on_every_partition(per_partition=1)
    for ws in spaces:
        await add_server(bot_db, ws)
    users = [unique() for _ in range(10)]
    for user in users:
        user_row = await add_user(bot_db, user)
        await add_old_personal_memories(bot_db, user_row, [(LINEAGE, f"recent {i}", 0) for i in range(4)])

    # Users in turn, each from every partition: the partitions reach each user together.
    sends = [(user, ws) for user in users for ws in spaces]
    results = await asyncio.gather(*(memory.create(personal_save(ws, user, f"new from {ws}")) for user, ws in sends))

    for user in users:
        mine = [r for (u, _), r in zip(sends, results, strict=True) if u == user]
        statuses = sorted(r.data.status for r in mine)
        assert statuses == sorted([SAVED] + [LIMIT_EXCEEDED] * (len(spaces) - 1)), (user, statuses)
        assert len(await personal_memories(bot_db, user)) == 5


async def test_concurrent_evictions_forget_each_dormant_row_once(e2e_worker, memory, bot_db, nc):
    user = unique()
    user_row = await add_user(bot_db, user)
    old_ids = await add_old_personal_memories(bot_db, user_row, [(LINEAGE, f"imported {d}", d) for d in range(40, 45)])
    spaces = workspaces_on_every_partition(per_partition=2)
    for ws in spaces:
        await add_server(bot_db, ws, decay=True)

    results = await asyncio.gather(*(
        memory.create(personal_save(ws, user, f"new {i}", retrieval=RAG)) for i, ws in enumerate(spaces)
    ))

    evicting = [r for r in results if r.data.status == SAVED_WITH_EVICTION]
    refused = [r for r in results if r.data.status == LIMIT_EXCEEDED]
    assert len(evicting) == 5 and len(refused) == len(spaces) - 5, [r.data.status for r in results]
    assert sorted(r.data.content_forgotten for r in evicting) == sorted(f"imported {d}" for d in range(40, 45))
    rows = await personal_memories(bot_db, user)
    assert {r["id"] for r in rows} == {r.data.memory_id for r in evicting}
    assert not {r["id"] for r in rows} & set(old_ids)

    evicted = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.evicted_subject("personal", user)])
    assert sorted(m.json()["memory_id"] for m in evicted) == sorted(old_ids)
    assert sorted(m.json()["replaced_by"] for m in evicted) == sorted(r.data.memory_id for r in evicting)
    metric_ids = {i for r in evicting for i in await eviction_metric_ids(bot_db, r.command_id)}
    metrics = [m for m in await read_stream(nc, subjects.EVENTS_STREAM, [subjects.METRIC_EVICTION_SUBJECT])
               if m.msg_id in metric_ids]
    assert [m.json() for m in metrics] == [{"scope": "personal", "decay_days": 30}] * 5


async def test_global_rows_count_but_are_never_evicted(e2e_worker, memory, bot_db):
    ws, user, full = unique(), unique(), unique()
    await add_server(bot_db, ws, decay=True)
    user_row, full_row = await add_user(bot_db, user), await add_user(bot_db, full)
    await add_old_personal_memories(bot_db, user_row, [
        (0, "bio seed", 300), (0, "global 1", 250), (0, "global 2", 200),
        (LINEAGE, "lineage old", 100), (LINEAGE, "lineage older", 150),
    ])
    await add_old_personal_memories(bot_db, full_row, [(0, f"global {i}", 300) for i in range(5)])

    evicting = await memory.create(personal_save(ws, user, "new fact", retrieval=RAG))
    other_lineage = await memory.create(personal_save(ws, user, "other persona's fact", lineage_id=LINEAGE + 1))
    only_globals = await memory.create(create_fields(
        ws, "{user} likes tea", scope="target_user", target="Quin", lineage_id=LINEAGE, retrieval=RAG,
        member_matches=[{"id": full, "display_name": "Quin"}]))

    assert evicting.data.status == SAVED_WITH_EVICTION, evicting
    assert evicting.data.content_forgotten == "lineage older"
    # Another lineage counts the 3 global rows and its own (none): room left.
    assert other_lineage.data.status == SAVED, other_lineage
    assert only_globals.data.status == LIMIT_EXCEEDED, only_globals
    assert (only_globals.data.current_count, only_globals.data.max_allowed) == (5, 5)
    assert sorted(r["content"] for r in await personal_memories(bot_db, user)) == sorted([
        "bio seed", "global 1", "global 2", "lineage old", "new fact", "other persona's fact"])
    assert len(await personal_memories(bot_db, full)) == 5


async def test_eviction_order_never_reinforced_first_then_least_recently_used(e2e_worker, memory, bot_db):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True, decay_days=30)
    # Inserted so that id order matches none of the orders that matter.
    c, a, e, d, b = await add_old_server_memories(bot_db, server_id, LINEAGE, [
        ("c: old, used 5 days ago", 200), ("a: old, used 40 days ago", 100), ("e: 45 days, never used", 45),
        ("d: written by hand", 60), ("b: 50 days, never used", 50),
    ])
    await set_reinforced(bot_db, c, 5)
    await set_reinforced(bot_db, a, 40)
    await bot_db.execute("UPDATE server_memories SET manually_written = true WHERE server_memory_id = $1", d)

    forgotten = []
    for i in range(4):
        result = await memory.create(create_fields(ws, f"new {i}", lineage_id=LINEAGE, retrieval=RAG))
        forgotten.append((result.data.status, result.data.content_forgotten))

    assert forgotten == [
        (SAVED_WITH_EVICTION, "b: 50 days, never used"),
        (SAVED_WITH_EVICTION, "e: 45 days, never used"),
        (SAVED_WITH_EVICTION, "a: old, used 40 days ago"),
        (LIMIT_EXCEEDED, None),
    ]
    assert {r["id"] for r in await server_memories(bot_db, ws, LINEAGE)} >= {c, d}


async def test_decay_days_come_from_the_workspace(e2e_worker, memory, bot_db, nc):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True, decay_days=7)
    await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"week old {i}", 8 + i) for i in range(5)])

    result = await memory.create(create_fields(ws, "new", lineage_id=LINEAGE, retrieval=RAG))

    assert result.data.status == SAVED_WITH_EVICTION, result
    assert result.data.content_forgotten == "week old 4"
    evicted = await read_stream(nc, subjects.EVENTS_STREAM, [subjects.evicted_subject("server", ws)])
    assert [m.json()["decay_days"] for m in evicted] == [7]
    metric_ids = await eviction_metric_ids(bot_db, result.command_id)
    metrics = [m for m in await read_stream(nc, subjects.EVENTS_STREAM, [subjects.METRIC_EVICTION_SUBJECT])
               if m.msg_id in metric_ids]
    assert [msgspec.json.decode(m.data) for m in metrics] == [{"scope": "server", "decay_days": 7}]


async def test_over_the_cap_refuses_and_deletes_nothing(e2e_worker, memory, bot_db):
    """A lowered cap leaves an owner above it: a save is refused, even with dormant rows."""
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True)
    await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"old {i}", 90) for i in range(6)])
    before = await server_memories(bot_db, ws)

    result = await memory.create(create_fields(ws, "new", lineage_id=LINEAGE, retrieval=RAG))

    assert result.data.status == LIMIT_EXCEEDED, result
    assert (result.data.current_count, result.data.max_allowed) == (6, 5)
    assert await server_memories(bot_db, ws) == before
