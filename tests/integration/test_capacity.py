"""Capacity and eviction on real PostgreSQL: the lock, the count, the victim, the rollback."""

from __future__ import annotations

import asyncio

import asyncpg
import msgspec
import pytest

from contracts.codec import RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, PRIVACY_RESTRICTED, SAVED, SAVED_WITH_EVICTION
from db.repository import MemoryRepository
from tests.support.directory import add_server, add_user
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService

from ..conftest import unique
from .helpers import (
    GOOD_RETRIEVAL,
    add_personal_memories,
    add_server_memories,
    inbox_row_events,
    personal_save,
    server_save,
)


def service(pool, **limits) -> CreateMemoryService:
    return CreateMemoryService(MemoryRepository(pool), Limits(**limits))


async def run(svc: CreateMemoryService, cmd):
    handled = await svc.run(cmd)
    return RESULT_DECODER.decode(handled.answer.result), handled


async def test_200_concurrent_saves_at_the_cap_evict_exactly_the_oldest_in_order(pool):
    ws = unique()
    cap = 250
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        # 250 eligible rows, oldest first by id: the 200 oldest must go, one per save.
        old_ids = await add_server_memories(conn, server_id, 7, [300 - i * 0.5 for i in range(cap)])
    svc = service(pool, max_server_memories=cap)

    outcomes = await asyncio.gather(*(run(svc, server_save(ws, f"new fact {i}", retrieval=GOOD_RETRIEVAL))
                                      for i in range(200)))

    assert {r.data.status for r, _ in outcomes} == {SAVED_WITH_EVICTION}
    async with pool.acquire() as conn:
        count = await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id)
        left = [r["server_memory_id"] for r in await conn.fetch(
            "SELECT server_memory_id FROM server_memories WHERE server_id = $1 AND source = 'legacy'"
            " ORDER BY server_memory_id", server_id)]
    assert count == cap
    assert left == old_ids[200:]
    # Processing order is the order of the new ids (taken under the lock); the victims must
    # follow the eviction order in that same sequence: the i-th save forgot the i-th oldest.
    by_processing = sorted((r for r, _ in outcomes), key=lambda r: r.data.memory_id)
    assert [r.data.content_forgotten for r in by_processing] == [f"old #{i}" for i in range(200)]


async def test_200_concurrent_saves_at_the_cap_without_eviction_are_all_refused(pool):
    ws = unique()
    cap = 250
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=False)
        await add_server_memories(conn, server_id, 7, [300 - i * 0.5 for i in range(cap)])
    svc = service(pool, max_server_memories=cap)

    outcomes = await asyncio.gather(*(run(svc, server_save(ws, f"new fact {i}", retrieval=GOOD_RETRIEVAL))
                                      for i in range(200)))

    for result, handled in outcomes:
        assert result.data.status == LIMIT_EXCEEDED
        assert (result.data.current_count, result.data.max_allowed) == (cap, cap)
        assert result.error == "Server memory limit reached. This server can have up to 250 memories (currently: 250)."
        assert handled.events == []
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == cap
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE events IS NOT NULL") == 0


async def test_concurrent_saves_below_the_cap_stop_exactly_at_it(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
    svc = service(pool, max_server_memories=10)

    outcomes = await asyncio.gather(*(run(svc, server_save(ws, f"fact {i}")) for i in range(60)))

    statuses = [r.data.status for r, _ in outcomes]
    assert statuses.count(SAVED) == 10
    assert statuses.count(LIMIT_EXCEEDED) == 50
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 10


async def test_personal_count_includes_lineage_zero_and_lineages_stay_isolated(pool):
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, user)
        await add_personal_memories(conn, user_id, 0, [1, 2, 3])  # global rows count for every lineage
        await add_personal_memories(conn, user_id, 7, [1, 2])
    svc = service(pool, max_personal_memories=5)

    at_cap, _ = await run(svc, personal_save(ws, user, "Mika", "{user} likes tea", lineage=7))
    other_lineage, _ = await run(svc, personal_save(ws, user, "Mika", "{user} likes tea", lineage=8))

    assert at_cap.data.status == LIMIT_EXCEEDED
    assert at_cap.data.current_count == 5
    assert other_lineage.data.status == SAVED


async def test_server_lineages_are_isolated(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_server_memories(conn, server_id, 7, [1, 2, 3])
    svc = service(pool, max_server_memories=3)

    full, _ = await run(svc, server_save(ws, "x", lineage=7))
    other, _ = await run(svc, server_save(ws, "x", lineage=9))

    assert full.data.status == LIMIT_EXCEEDED
    assert other.data.status == SAVED


async def test_personal_eviction_never_takes_lineage_zero(pool):
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
        user_id = await add_user(conn, user)
        await add_personal_memories(conn, user_id, 0, [400, 300])  # oldest, but global
        await add_personal_memories(conn, user_id, 7, [100, 90, 80])
    svc = service(pool, max_personal_memories=5)

    result, _ = await run(svc, personal_save(ws, user, "Mika", "new", lineage=7, retrieval=GOOD_RETRIEVAL))

    assert result.data.status == SAVED_WITH_EVICTION
    assert result.data.content_forgotten == "personal #0"  # the 100-day-old lineage-7 row
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT count(*) FROM personal_memories WHERE user_id = $1 AND persona_lineage_id = 0", user_id) == 2


async def test_over_the_cap_is_refused_and_nothing_is_deleted(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, 7, [100, 90, 80, 70])
    svc = service(pool, max_server_memories=3)  # the cap was lowered below what is stored

    result, _ = await run(svc, server_save(ws, "x", retrieval=GOOD_RETRIEVAL))

    assert result.data.status == LIMIT_EXCEEDED
    assert result.data.current_count == 4
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 4


async def test_at_the_cap_with_nothing_eligible_is_refused_with_that_reason(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, 7, [100, 90], manual=True)
        await add_server_memories(conn, server_id, 7, [1])  # too recent to be dormant
    svc = service(pool, max_server_memories=3)

    result, _ = await run(svc, server_save(ws, "x", retrieval=GOOD_RETRIEVAL))

    assert result.data.status == LIMIT_EXCEEDED
    assert result.data.current_count == 3


async def test_a_save_whose_insert_fails_after_its_delete_keeps_the_old_memory(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        old = await add_server_memories(conn, server_id, 7, [100, 90])
        # Make the insert fail after the victim's delete, inside the same transaction.
        await conn.execute("""
            CREATE FUNCTION fail_on_boom() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.content = 'boom' THEN RAISE EXCEPTION 'insert failed on purpose'; END IF;
                  RETURN NEW; END $$;
            CREATE TRIGGER fail_on_boom BEFORE INSERT ON server_memories
                FOR EACH ROW EXECUTE FUNCTION fail_on_boom();""")
    svc = service(pool, max_server_memories=2)
    cmd = server_save(ws, "boom", retrieval=GOOD_RETRIEVAL)

    with pytest.raises(asyncpg.RaiseError, match="on purpose"):
        await svc.run(cmd)

    async with pool.acquire() as conn:
        ids = [r[0] for r in await conn.fetch(
            "SELECT server_memory_id FROM server_memories WHERE server_id = $1 ORDER BY 1", server_id)]
        assert ids == old
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == 0


async def test_dormancy_boundary_follows_the_workspace_decay_days(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True, decay_days=10)
        await add_server_memories(conn, server_id, 7, [9.9, 10.1])
    result, _ = await run(service(pool, max_server_memories=2), server_save(ws, "x", retrieval=GOOD_RETRIEVAL))
    assert result.data.status == SAVED_WITH_EVICTION
    assert result.data.content_forgotten == "old #1"


async def test_events_are_written_in_publish_order_with_ids_filled(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        old = await add_server_memories(conn, server_id, 7, [100])
    result, handled = await run(service(pool, max_server_memories=1), server_save(ws, "x", retrieval=GOOD_RETRIEVAL))

    subjects_ = [row.subject for row in handled.events]
    assert subjects_ == [f"cache.invalidate.tomori_state.{ws}", f"memory.saved.server.{ws}",
                         f"memory.evicted.server.{ws}", "metrics.memory_eviction"]
    saved = msgspec.json.decode(bytes(handled.events[1].payload))
    evicted = msgspec.json.decode(bytes(handled.events[2].payload))
    assert saved["memory_id"] == result.data.memory_id
    assert saved["evicted"] == {"memory_id": old[0], "content": "old #0"}
    assert (evicted["memory_id"], evicted["replaced_by"], evicted["content_forgotten"]) == (
        old[0], result.data.memory_id, "old #0")
    assert msgspec.json.decode(bytes(handled.events[3].payload)) == {"scope": "server", "decay_days": 30}
    assert [row.headers["Nats-Msg-Id"] for row in handled.events[:3]] == [
        f"{result.command_id}:invalidate:tomori_state:{ws}", f"{result.command_id}:saved",
        f"{result.command_id}:evicted"]
    # The metric's id is opaque (docs/design.md, section 3.5): nothing in it leads back to the command.
    metric_id = handled.events[3].headers["Nats-Msg-Id"]
    assert result.command_id not in metric_id and ws not in metric_id and len(metric_id) >= 32


async def test_a_repeated_command_returns_the_stored_result_and_changes_nothing(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
    svc = service(pool)
    cmd = server_save(ws, "once")

    results = await asyncio.gather(*(svc.run(cmd) for _ in range(8)))

    assert len({h.answer.result for h in results}) == 1
    assert sum(not h.duplicate for h in results) == 1
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 1
    assert [e.subject for e in await inbox_row_events(pool, cmd)] == [
        f"cache.invalidate.tomori_state.{ws}", f"memory.saved.server.{ws}"]


async def test_privacy_is_read_again_under_the_lock(pool):
    """A user who opts out between the context read and the save is not saved."""
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, user)
    repo = MemoryRepository(pool)
    svc = CreateMemoryService(repo, Limits())
    original = repo.create_contexts

    async def context_then_opt_out(*args, **kwargs):
        row = await original(*args, **kwargs)
        async with pool.acquire() as conn:
            await conn.execute("UPDATE users SET privacy_level = 2 WHERE user_id = $1", user_id)
        return row

    repo.create_contexts = context_then_opt_out
    cmd = personal_save(ws, user, "Mika", "{user} likes tea")
    result = RESULT_DECODER.decode((await svc.run(cmd)).answer.result)

    assert result.data.status == PRIVACY_RESTRICTED
    # The level read under the lock, not the one read before (the text is TomoriBot's, the same for both).
    assert await _outcome(pool, cmd.command_id) == "privacy_full"
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", user_id) == 0


async def test_a_privacy_level_outside_the_known_ones_read_under_the_lock_refuses(pool):
    """Fails closed: a bot database whose privacy_level allows more values than 0, 1 and 2 (the
    standalone CHECK is dropped here, in this test's own database) refuses a user who moved to
    an unknown level after the context read, as full privacy; it never saves."""
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, user)
        check = await conn.fetchval("SELECT conname FROM pg_constraint WHERE conrelid = 'public.users'::regclass"
                                    " AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%privacy_level%'")
        await conn.execute(f'ALTER TABLE public.users DROP CONSTRAINT "{check}"')
    repo = MemoryRepository(pool)
    original = repo.create_contexts

    async def context_then_unknown_level(*args, **kwargs):
        row = await original(*args, **kwargs)
        await pool.execute("UPDATE users SET privacy_level = 3 WHERE user_id = $1", user_id)
        return row

    repo.create_contexts = context_then_unknown_level
    cmd = personal_save(ws, user, "Mika", "{user} likes tea")
    result = RESULT_DECODER.decode((await CreateMemoryService(repo, Limits()).run(cmd)).answer.result)

    assert result.data.status == PRIVACY_RESTRICTED
    assert await _outcome(pool, cmd.command_id) == "privacy_full"
    assert await pool.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", user_id) == 0


async def _outcome(pool, command_id: str) -> str:
    """How the save ended under the lock, as its inbox row keeps it."""
    return await pool.fetchval("SELECT facts ->> 'outcome' FROM processed_commands WHERE command_id = $1", command_id)


@pytest.mark.parametrize("change", ["host-goes-full", "host-unlinked"])
async def test_a_proxy_hosts_protection_is_read_again_under_the_lock(pool, change):
    """A host who protects the identity between the context read and the save stops the save."""
    import uuid as _uuid

    from tests.support.directory import add_proxy_identity

    ws, host, proxy = unique(), unique(), f"pk:{_uuid.uuid4()}"
    namespace = unique("ns-")
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, host)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=namespace, hosts=[host])
    repo = MemoryRepository(pool)
    svc = CreateMemoryService(repo, Limits())
    original = repo.create_contexts

    async def context_then_protect(*args, **kwargs):
        row = await original(*args, **kwargs)
        async with pool.acquire() as conn:
            if change == "host-goes-full":
                await conn.execute("UPDATE users SET privacy_level = 2 WHERE user_disc_id = $1", host)
            else:
                await conn.execute("DELETE FROM message_proxy_namespace_accounts WHERE namespace_id = $1", namespace)
        return row

    repo.create_contexts = context_then_protect
    cmd = server_save(ws, "{user} likes storms", participants=[{"id": proxy, "kind": "proxy", "label": "Nova"}],
                      tool_args={"memory_content": "{user} likes storms", "memory_scope": "target_user",
                                 "target_user": proxy})
    result = RESULT_DECODER.decode((await svc.run(cmd)).answer.result)

    assert result.data.status == PRIVACY_RESTRICTED
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", proxy_uid) == 0
