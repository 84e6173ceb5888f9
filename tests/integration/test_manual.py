"""memory.manual on real PostgreSQL (docs/design.md, section 8.1): each status with its effect on the tables
and the outbox, who may act on which rows, proxy identities and their hosts, batches, the inbox.
"""

from __future__ import annotations

import asyncio
import uuid

import msgspec
import pytest

from contracts.codec import OP_RESULT_DECODER
from contracts.kinds.manual import (
    ADDED,
    ALL_DUPLICATES,
    BATCH_LIMIT_REACHED,
    BLACKLISTED,
    CONTENT_TOO_LONG,
    EMPTY_CONTENT,
    HOST_PROTECTED,
    LIMIT_REACHED,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    REMOVED,
    TEACHING_DISABLED,
    UNCHANGED,
    UPDATED,
    ManualMemory,
)
from contracts.op_result import OpResult
from contracts.result_parts import CacheKey
from db.repository import MemoryRepository
from tests.support.commands import manual_command
from tests.support.directory import add_proxy_identity, add_server, add_user, blacklist
from worker.domain.workspace import Limits
from worker.kinds.manual.service import ManualMemoryService
from worker.services.base import Handled

from ..conftest import unique
from .helpers import add_personal_memories, add_server_memories, event_subjects, module_database

LINEAGE = 7
MANAGER = "300000000000000001"


def manual(workspace: str, *, action: str = "add", scope: str = "server", actor: str = MANAGER,
           is_manager: bool = True, lineage: int = LINEAGE, **fields) -> ManualMemory:
    return manual_command(workspace, action=action, scope=scope, actor=actor, is_manager=is_manager,
                          lineage_id=lineage, **fields)


def service(pool, **limits) -> ManualMemoryService:
    return ManualMemoryService(MemoryRepository(pool), Limits(**{"max_server_memories": 5,
                                                                 "max_personal_memories": 5, **limits}))


async def run(svc: ManualMemoryService, cmd: ManualMemory) -> tuple[OpResult, Handled]:
    handled = await svc.run(cmd)
    return OP_RESULT_DECODER.decode(handled.answer.result), handled


async def server_row(conn, memory_id: int):
    return await conn.fetchrow("SELECT * FROM server_memories WHERE server_memory_id = $1", memory_id)


async def personal_row(conn, memory_id: int):
    return await conn.fetchrow("SELECT * FROM personal_memories WHERE personal_memory_id = $1", memory_id)


def payloads(handled: Handled) -> list[dict]:
    return [msgspec.json.decode(bytes(row.payload)) for row in handled.events]


def new_proxy_id() -> str:
    return f"pk:{uuid.uuid4()}"


@pytest.fixture(scope="module")
async def pool(pg_server, template_db):
    """One database for the module: every test uses its own workspaces and users."""
    async with module_database(pg_server, template_db) as shared:
        yield shared


# --- add --------------------------------------------------------------------------------------


async def test_server_add_writes_a_protected_manual_row_with_parsed_tags_and_its_events(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
    raw_tags = ' "tea" , #general, Tea, , ' + "x" * 33 + ", 'a', b, c, d"

    result, handled = await run(service(pool), manual(ws, content="  {user} likes tea  ", tags=raw_tags))

    assert result.success and result.data.status == ADDED, result
    assert result.data.memory_ids == [result.data.memory_id]
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    async with pool.acquire() as conn:
        row = await server_row(conn, result.data.memory_id)
        teacher = await conn.fetchval("SELECT user_disc_id FROM users WHERE user_id = $1", row["user_id"])
        subjects_ = await event_subjects(conn, result.command_id)
    assert row["server_id"] == server_id and row["persona_lineage_id"] == LINEAGE and row["persona_id"] == 1
    assert row["content"] == "{user} likes tea"  # trimmed, never sanitized
    assert list(row["tags"]) == ["tea", "#general", "a", "b", "c"]
    assert (row["manually_written"], row["source"]) == (True, "manual")
    assert (row["last_reinforced_at"], row["reinforcement_count"]) == (None, 0)
    assert teacher == MANAGER
    assert subjects_ == [f"cache.invalidate.tomori_state.{ws}", f"memory.saved.server.{ws}"]
    saved = payloads(handled)[1]
    assert (saved["memory_id"], saved["content"], saved["source"], saved["manually_written"]) == (
        row["server_memory_id"], "{user} likes tea", "manual", True)
    assert (saved["scope"], saved["owner_id"], saved["lineage_id"], saved["evicted"]) == ("server", ws, LINEAGE, None)


async def test_tags_given_as_a_list_are_parsed_like_text(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)

    result, _ = await run(service(pool), manual(ws, content="fact", tags=["tea, coffee", "#lobby", "TEA", "  "]))

    async with pool.acquire() as conn:
        row = await server_row(conn, result.data.memory_id)
    assert list(row["tags"]) == ["tea", "coffee", "#lobby"]


@pytest.mark.parametrize("content, expected", [("   \n ", EMPTY_CONTENT), ("x" * 11, CONTENT_TOO_LONG)])
async def test_bad_content_is_refused_and_writes_nothing(pool, content, expected):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)

    result, handled = await run(service(pool, max_memory_length=10), manual(ws, content=content))

    assert (result.success, result.data.status) == (False, expected)
    assert result.error and result.data.reason == result.error
    assert handled.events == [] and result.invalidated == []
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 0
        assert await event_subjects(conn, result.command_id) == []
        assert await conn.fetchval("SELECT status FROM processed_commands WHERE command_id = $1",
                                   result.command_id) == expected


async def test_an_emoji_counts_two_units_against_the_length_limit(pool):
    ws = unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
    svc = service(pool, max_memory_length=10)

    fits, _ = await run(svc, manual(ws, content="abcdefgh\U0001F600"))  # 8 + 2 units
    too_long, _ = await run(svc, manual(ws, content="abcdefghi\U0001F600"))  # 9 + 2 units

    assert fits.data.status == ADDED
    assert too_long.data.status == CONTENT_TOO_LONG


async def test_add_at_the_cap_is_refused_and_never_evicts(pool):
    ws = unique()
    async with pool.acquire() as conn:
        # Decay on and every row long dormant: a model save could evict here, a manual add never does.
        server_id = await add_server(conn, ws, decay=True)
        ids = await add_server_memories(conn, server_id, LINEAGE, [400, 300, 200, 100, 90])

    result, handled = await run(service(pool), manual(ws, content="one more"))

    assert (result.success, result.data.status) == (False, LIMIT_REACHED)
    assert "5" in result.error and "/memories" in result.error
    assert handled.events == []
    async with pool.acquire() as conn:
        left = [r[0] for r in await conn.fetch(
            "SELECT server_memory_id FROM server_memories WHERE server_id = $1 ORDER BY 1", server_id)]
        assert await event_subjects(conn, result.command_id) == []
    assert left == ids


async def test_the_cap_counts_only_the_commands_lineage(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_server_memories(conn, server_id, LINEAGE + 1, [1] * 5)

    result, _ = await run(service(pool), manual(ws, content="fits"))

    assert result.data.status == ADDED


async def test_server_add_registers_an_unknown_workspace(pool):
    ws = unique()

    result, _ = await run(service(pool), manual(ws, content="first memory"))

    assert result.data.status == ADDED
    async with pool.acquire() as conn:
        assert await conn.fetchval(
            "SELECT s.server_disc_id FROM server_memories m JOIN servers s USING (server_id)"
            " WHERE m.server_memory_id = $1", result.data.memory_id) == ws


# --- edit -------------------------------------------------------------------------------------


async def seeded_server(pool, *, manual_rows: bool = False, reinforced_days_ago: float | None = 3.0):
    """A workspace with one model-written (or manual) row, reinforced some days ago."""
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        (memory_id,) = await add_server_memories(conn, server_id, LINEAGE, [100], manual=manual_rows,
                                                 source="model", reinforced_days_ago=[reinforced_days_ago])
        await conn.execute("UPDATE server_memories SET tags = '{tea}', reinforcement_count = 4,"
                           " updated_at = now() - interval '50 days' WHERE server_memory_id = $1", memory_id)
        before = await server_row(conn, memory_id)
    return ws, memory_id, before


@pytest.mark.parametrize("change", ["content", "tags-only", "same-content", "content-none"])
async def test_every_edit_of_an_unprotected_row_protects_it_without_touching_reinforcement(pool, change):
    ws, memory_id, before = await seeded_server(pool)
    fields = {
        "content": {"content": "  {user} prefers green tea "},
        "tags-only": {"content": "old #0", "tags": "tea, #kitchen"},
        "same-content": {"content": "old #0"},  # a re-save of unchanged content
        "content-none": {"tags": ["coffee"]},  # content omitted: keep the stored text
    }[change]

    result, handled = await run(service(pool), manual(ws, action="edit", memory_id=memory_id, **fields))

    assert (result.success, result.data.status, result.data.memory_id) == (True, UPDATED, memory_id), result
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    async with pool.acquire() as conn:
        after = await server_row(conn, memory_id)
        subjects_ = await event_subjects(conn, result.command_id)
    expected_content = {"content": "{user} prefers green tea"}.get(change, "old #0")
    expected_tags = {"tags-only": ["tea", "#kitchen"], "content-none": ["coffee"]}.get(change, ["tea"])
    assert (after["content"], list(after["tags"])) == (expected_content, expected_tags)
    assert after["manually_written"] is True
    assert after["last_reinforced_at"] == before["last_reinforced_at"]
    assert after["reinforcement_count"] == before["reinforcement_count"] == 4
    assert after["created_at"] == before["created_at"]
    assert after["updated_at"] > before["updated_at"]
    assert subjects_ == [f"cache.invalidate.tomori_state.{ws}", f"memory.saved.server.{ws}"]
    saved = payloads(handled)[1]
    assert (saved["memory_id"], saved["content"], saved["manually_written"]) == (memory_id, expected_content, True)
    assert saved["source"] == after["source"]


async def test_an_identical_edit_of_a_protected_row_is_unchanged_and_writes_nothing(pool):
    ws, memory_id, before = await seeded_server(pool, manual_rows=True)

    result, handled = await run(service(pool), manual(ws, action="edit", memory_id=memory_id,
                                                      content=" old #0 ", tags="tea"))

    assert (result.success, result.data.status, result.data.memory_id) == (True, UNCHANGED, memory_id)
    assert result.invalidated == [] and handled.events == []
    async with pool.acquire() as conn:
        assert dict(await server_row(conn, memory_id)) == dict(before)
        assert await event_subjects(conn, result.command_id) == []


async def test_a_tag_case_change_of_a_protected_row_is_an_update(pool):
    ws, memory_id, before = await seeded_server(pool, manual_rows=True)

    result, _ = await run(service(pool), manual(ws, action="edit", memory_id=memory_id, content="old #0", tags="Tea"))

    assert result.data.status == UPDATED
    async with pool.acquire() as conn:
        after = await server_row(conn, memory_id)
    assert list(after["tags"]) == ["Tea"]
    assert after["last_reinforced_at"] == before["last_reinforced_at"]


async def test_an_edit_with_content_and_tags_omitted_of_a_protected_row_is_unchanged(pool):
    ws, memory_id, before = await seeded_server(pool, manual_rows=True)

    result, handled = await run(service(pool), manual(ws, action="edit", memory_id=memory_id))

    assert result.data.status == UNCHANGED
    assert handled.events == []
    async with pool.acquire() as conn:
        after = await server_row(conn, memory_id)
    assert dict(after) == dict(before)


@pytest.mark.parametrize("content, expected", [("  ", EMPTY_CONTENT), ("y" * 11, CONTENT_TOO_LONG)])
async def test_a_bad_edit_is_refused_and_leaves_the_row(pool, content, expected):
    ws, memory_id, before = await seeded_server(pool)

    result, handled = await run(service(pool, max_memory_length=10),
                                manual(ws, action="edit", memory_id=memory_id, content=content))

    assert (result.success, result.data.status) == (False, expected)
    assert handled.events == []
    async with pool.acquire() as conn:
        assert dict(await server_row(conn, memory_id)) == dict(before)


# --- remove -----------------------------------------------------------------------------------


async def test_remove_deletes_the_row_and_announces_it(pool):
    ws, memory_id, _ = await seeded_server(pool)

    result, handled = await run(service(pool), manual(ws, action="remove", memory_id=memory_id))

    assert (result.success, result.data.status, result.data.memory_id) == (True, REMOVED, memory_id)
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    async with pool.acquire() as conn:
        assert await server_row(conn, memory_id) is None
        assert await event_subjects(conn, result.command_id) == [
            f"cache.invalidate.tomori_state.{ws}", f"memory.removed.server.{ws}"]
    removed = payloads(handled)[1]
    assert (removed["scope"], removed["owner_id"], removed["lineage_id"]) == ("server", ws, LINEAGE)
    assert (removed["memory_id"], removed["content"]) == (memory_id, "old #0")

    again, again_handled = await run(service(pool), manual(ws, action="remove", memory_id=memory_id))
    assert (again.success, again.data.status) == (False, NOT_FOUND)
    assert again_handled.events == []


# --- the exact owner and lineage --------------------------------------------------------------


@pytest.mark.parametrize("action", ["edit", "remove"])
@pytest.mark.parametrize("where", ["other-workspace", "other-lineage", "unknown-id", "no-id"])
async def test_edit_or_remove_outside_the_owner_and_exact_lineage_is_not_found(pool, action, where):
    ws, other_ws = unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        other_id = await add_server(conn, other_ws)
        (mine,) = await add_server_memories(conn, server_id, LINEAGE, [1])
        (other_lineage,) = await add_server_memories(conn, server_id, LINEAGE + 1, [1])
        (elsewhere,) = await add_server_memories(conn, other_id, LINEAGE, [1])
    target = {"other-workspace": elsewhere, "other-lineage": other_lineage, "unknown-id": 10**12,
              "no-id": None}[where]

    result, handled = await run(service(pool), manual(ws, action=action, memory_id=target, content="hijack"))

    assert (result.success, result.data.status) == (False, NOT_FOUND)
    assert result.data.reason
    assert handled.events == []
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT server_memory_id, content, manually_written FROM server_memories"
                                " WHERE server_id IN ($1, $2) ORDER BY 1", server_id, other_id)
    assert [(r[0], r[1], r[2]) for r in rows] == [(i, "old #0", False) for i in (mine, other_lineage, elsewhere)]


async def test_personal_edit_of_another_users_row_or_another_lineage_is_not_found(pool):
    ws, me, other = unique(), unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        my_uid = await add_user(conn, me)
        other_uid = await add_user(conn, other)
        (global_row,) = await add_personal_memories(conn, my_uid, 0, [1])
        (theirs,) = await add_personal_memories(conn, other_uid, LINEAGE, [1])
    svc = service(pool)

    for memory_id, lineage in [(theirs, LINEAGE), (global_row, LINEAGE)]:
        result, _ = await run(svc, manual(ws, scope="personal", actor=me, action="edit", memory_id=memory_id,
                                          lineage=lineage, content="mine now"))
        assert result.data.status == NOT_FOUND, (memory_id, lineage)
    # The global category is edited with lineage 0.
    result, _ = await run(svc, manual(ws, scope="personal", actor=me, action="edit", memory_id=global_row,
                                      lineage=0, content="global fact"))
    assert result.data.status == UPDATED
    async with pool.acquire() as conn:
        assert (await personal_row(conn, theirs))["content"] == "personal #0"
        assert (await personal_row(conn, global_row))["content"] == "global fact"


# --- managers and non-managers ----------------------------------------------------------------


async def test_blacklisted_non_manager_is_refused_but_a_blacklisted_manager_is_not(pool):
    ws, someone = unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await blacklist(conn, server_id, someone)
    svc = service(pool)

    refused, handled = await run(svc, manual(ws, actor=someone, is_manager=False, content="fact"))
    allowed, _ = await run(svc, manual(ws, actor=someone, is_manager=True, content="fact"))

    assert (refused.success, refused.data.status) == (False, BLACKLISTED)
    assert handled.events == []
    assert allowed.data.status == ADDED
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 1


async def test_teaching_disabled_refuses_non_managers_adds_and_edits_but_not_their_removals(pool):
    ws, teacher = unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
    svc = service(pool)
    taught, _ = await run(svc, manual(ws, actor=teacher, is_manager=False, content="taught while allowed"))
    async with pool.acquire() as conn:
        await conn.execute("UPDATE servers SET self_teaching_enabled = false WHERE server_id = $1", server_id)

    add, _ = await run(svc, manual(ws, actor=teacher, is_manager=False, content="more"))
    edit, _ = await run(svc, manual(ws, actor=teacher, is_manager=False, action="edit",
                                    memory_id=taught.data.memory_id, content="changed"))
    manager_add, _ = await run(svc, manual(ws, content="managers still can"))
    remove, _ = await run(svc, manual(ws, actor=teacher, is_manager=False, action="remove",
                                      memory_id=taught.data.memory_id))

    assert (add.success, add.data.status) == (False, TEACHING_DISABLED)
    assert edit.data.status == TEACHING_DISABLED
    assert manager_add.data.status == ADDED
    assert remove.data.status == REMOVED
    async with pool.acquire() as conn:
        contents = [r[0] for r in await conn.fetch(
            "SELECT content FROM server_memories WHERE server_id = $1", server_id)]
    assert contents == ["managers still can"]


@pytest.mark.parametrize("action", ["edit", "remove"])
async def test_non_managers_change_only_rows_they_taught(pool, action):
    ws, alice, bob = unique(), unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        (model_row,) = await add_server_memories(conn, server_id, LINEAGE, [1])  # no teacher: managers only
    svc = service(pool)
    by_alice, _ = await run(svc, manual(ws, actor=alice, is_manager=False, content="alice's fact"))
    by_bob, _ = await run(svc, manual(ws, actor=bob, is_manager=False, content="bob's fact"))

    outcomes = {}
    for name, memory_id in [("bob", by_bob.data.memory_id), ("model", model_row), ("alice", by_alice.data.memory_id)]:
        result, _ = await run(svc, manual(ws, actor=alice, is_manager=False, action=action, memory_id=memory_id,
                                          content="alice was here"))
        outcomes[name] = result.data.status
    manager, _ = await run(svc, manual(ws, action=action, memory_id=by_bob.data.memory_id, content="manager"))

    done = UPDATED if action == "edit" else REMOVED
    assert outcomes == {"bob": NOT_FOUND, "model": NOT_FOUND, "alice": done}
    assert manager.data.status == done
    async with pool.acquire() as conn:
        model_content = await conn.fetchval("SELECT content FROM server_memories WHERE server_memory_id = $1",
                                            model_row)
    assert model_content == "old #0"


# --- personal memories and privacy ------------------------------------------------------------


@pytest.mark.parametrize("privacy, expected", [(0, ADDED), (1, ADDED), (2, PRIVACY_BLOCKED)])
async def test_personal_add_is_blocked_only_by_full_privacy(pool, privacy, expected):
    ws, me = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, me, privacy=privacy)

    result, handled = await run(service(pool), manual(ws, scope="personal", actor=me, content="I like tea",
                                                      tags="#dm"))

    assert result.data.status == expected
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT * FROM personal_memories WHERE user_id = $1", user_id)
        subjects_ = await event_subjects(conn, result.command_id)
    if expected == ADDED:
        assert result.invalidated == [CacheKey("user", me)]
        [row] = rows
        assert (row["personal_memory_id"], row["persona_lineage_id"], row["content"], list(row["tags"])) == (
            result.data.memory_id, LINEAGE, "I like tea", ["#dm"])
        assert (row["manually_written"], row["source"], row["last_reinforced_at"]) == (True, "manual", None)
        assert subjects_ == [f"cache.invalidate.user.{me}", f"memory.saved.personal.{me}"]
        assert payloads(handled)[1]["owner_id"] == me
    else:
        assert result.success is False and "/personal config" in result.error
        assert rows == [] and subjects_ == []


async def test_full_privacy_blocks_personal_edits_too(pool):
    action = "edit"
    ws, me = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        user_id = await add_user(conn, me, privacy=2)
        (memory_id,) = await add_personal_memories(conn, user_id, LINEAGE, [1])

    result, _ = await run(service(pool), manual(ws, scope="personal", actor=me, action=action,
                                                memory_id=memory_id, content="x"))

    assert result.data.status == PRIVACY_BLOCKED
    async with pool.acquire() as conn:
        assert (await personal_row(conn, memory_id))["content"] == "personal #0"


async def test_personal_add_for_an_actor_without_a_users_row_creates_it(pool):
    ws, me = unique(), unique()

    result, _ = await run(service(pool), manual(ws, scope="personal", actor=me, lineage=0, content="global"))

    assert result.data.status == ADDED
    async with pool.acquire() as conn:
        owner = await conn.fetchval(
            "SELECT u.user_disc_id FROM personal_memories m JOIN users u USING (user_id)"
            " WHERE m.personal_memory_id = $1 AND m.persona_lineage_id = 0", result.data.memory_id)
    assert owner == me


async def test_personal_cap_counts_the_lineage_and_the_global_rows(pool):
    ws, me = unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
        user_id = await add_user(conn, me)
        await add_personal_memories(conn, user_id, 0, [400, 400, 400])
        await add_personal_memories(conn, user_id, LINEAGE, [400, 400])
    svc = service(pool)

    full, _ = await run(svc, manual(ws, scope="personal", actor=me, content="more"))
    other_lineage, _ = await run(svc, manual(ws, scope="personal", actor=me, lineage=LINEAGE + 1, content="more"))

    assert full.data.status == LIMIT_REACHED
    assert other_lineage.data.status == ADDED
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", user_id) == 6


# --- proxy identities ---------------------------------------------------------------------------


@pytest.mark.parametrize("host_privacy", [0, 1])
async def test_a_host_adds_to_its_open_proxy_identitys_personal_memories(pool, host_privacy):
    ws, host, proxy = unique(), unique(), new_proxy_id()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        host_uid = await add_user(conn, host, privacy=host_privacy)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])

    result, handled = await run(service(pool), manual(ws, scope="personal", actor=host, identity_id=proxy,
                                                      content="Nova loves storms"))

    assert result.data.status == ADDED, result
    assert result.invalidated == [CacheKey("user", proxy)]
    async with pool.acquire() as conn:
        row = await personal_row(conn, result.data.memory_id)
        assert await conn.fetchval("SELECT count(*) FROM personal_memories WHERE user_id = $1", host_uid) == 0
        assert await event_subjects(conn, result.command_id) == [
            f"cache.invalidate.user.{proxy}", f"memory.saved.personal.{proxy}"]
    assert (row["user_id"], row["content"], row["manually_written"]) == (proxy_uid, "Nova loves storms", True)
    assert payloads(handled)[1]["owner_id"] == proxy


@pytest.mark.parametrize("action", ["add", "edit", "remove"])
@pytest.mark.parametrize("case", ["host-full-privacy", "host-blacklisted", "one-of-two-hosts-full"])
async def test_a_protected_host_blocks_every_write_for_the_identity_but_removals(pool, action, case):
    ws, host, co_host, proxy = unique(), unique(), unique(), new_proxy_id()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_user(conn, host, privacy=2 if case == "host-full-privacy" else 0)
        await add_user(conn, co_host, privacy=2 if case == "one-of-two-hosts-full" else 0)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"),
                                             hosts=[host, co_host] if case == "one-of-two-hosts-full" else [host])
        (memory_id,) = await add_personal_memories(conn, proxy_uid, LINEAGE, [1])
        if case == "host-blacklisted":
            await blacklist(conn, server_id, host)

    result, handled = await run(service(pool), manual(ws, scope="personal", actor=host, identity_id=proxy,
                                                      action=action, memory_id=memory_id, content="x"))

    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT personal_memory_id, content FROM personal_memories WHERE user_id = $1",
                                proxy_uid)
    if action == "remove":
        # Forgetting is never blocked by a host's protection.
        assert result.data.status == REMOVED and rows == []
        return
    assert (result.success, result.data.status) == (False, HOST_PROTECTED), result
    assert result.error and handled.events == []
    assert [(r[0], r[1]) for r in rows] == [(memory_id, "personal #0")]


@pytest.mark.parametrize("case", ["hosted-by-someone-else", "unknown-identity", "no-host-link"])
async def test_an_identity_the_actor_does_not_host_is_not_found(pool, case):
    """No host link at all also fails closed: nobody can be shown to host the identity."""
    ws, actor, host, proxy = unique(), unique(), unique(), new_proxy_id()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, actor)
        if case == "hosted-by-someone-else":
            await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])
        elif case == "no-host-link":
            await add_proxy_identity(conn, proxy, namespace_id=None)

    result, handled = await run(service(pool), manual(ws, scope="personal", actor=actor, identity_id=proxy,
                                                      content="x"))

    assert (result.success, result.data.status) == (False, NOT_FOUND), result
    assert handled.events == []
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM personal_memories m JOIN users u USING (user_id)"
                                   " WHERE u.user_disc_id IN ($1, $2, $3)", actor, host, proxy) == 0


async def test_a_hosts_own_full_privacy_does_not_bypass_the_identity_check(pool):
    """Acting for an identity, the host's own FULL privacy answers host-protected, never a write."""
    ws, host, proxy = unique(), unique(), new_proxy_id()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, host, privacy=2)
        await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])

    result, _ = await run(service(pool), manual(ws, scope="personal", actor=host, identity_id=proxy, content="x"))

    assert result.data.status == HOST_PROTECTED


# --- batches ------------------------------------------------------------------------------------


async def test_batch_trims_drops_blanks_and_dedupes_against_itself_and_existing_rows(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await conn.execute("INSERT INTO server_memories (server_id, persona_lineage_id, content)"
                           " VALUES ($1, $2, 'Likes Tea')", server_id, LINEAGE)
    contents = ["  likes tea ", "", "   ", "plays chess", "PLAYS CHESS", "\tsings\n", "Sings"]

    result, handled = await run(service(pool), manual(ws, action="add_batch", contents=contents,
                                                      content=" hikes ", tags="hobby"))

    assert (result.success, result.data.status) == (True, ADDED), result
    assert result.data.skipped_duplicates == 3
    ids = result.data.memory_ids
    assert len(ids) == 3 and ids == sorted(ids)
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT server_memory_id, content, tags, manually_written, source"
                                " FROM server_memories WHERE server_id = $1 AND source = 'manual' ORDER BY 1",
                                server_id)
        subjects_ = await event_subjects(conn, result.command_id)
    assert [r[0] for r in rows] == ids
    assert [r[1] for r in rows] == ["plays chess", "sings", "hikes"]  # the typed entry comes last
    assert all(list(r[2]) == ["hobby"] and r[3] for r in rows)
    assert subjects_ == [f"cache.invalidate.tomori_state.{ws}"] + [f"memory.saved.server.{ws}"] * 3
    assert [p["memory_id"] for p in payloads(handled)[1:]] == ids


async def test_batch_of_only_duplicates_adds_nothing(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_server_memories(conn, server_id, LINEAGE, [1, 1])  # "old #0", "old #1"

    result, handled = await run(service(pool), manual(ws, action="add_batch", contents=["OLD #0", " old #1", "Old #1"]))

    assert (result.success, result.data.status) == (False, ALL_DUPLICATES)
    assert handled.events == []
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 2


async def test_blank_batch_is_empty_content(pool):
    ws = unique()

    result, _ = await run(service(pool), manual(ws, action="add_batch", contents=["", "  ", "\n"]))

    assert result.data.status == EMPTY_CONTENT


async def test_batch_over_the_cap_is_all_or_nothing_with_available_and_requested(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, LINEAGE, [400, 400, 400])
    svc = service(pool)

    # Duplicates do not count as requested: 3 new memories, 2 places left.
    over, handled = await run(svc, manual(ws, action="add_batch", contents=["a", "b", "A", "c", "old #0"]))
    fits, _ = await run(svc, manual(ws, action="add_batch", contents=["a", "b", "old #0"]))

    assert (over.success, over.data.status) == (False, BATCH_LIMIT_REACHED)
    assert (over.data.available, over.data.requested) == (2, 3)
    assert handled.events == []
    assert fits.data.status == ADDED and len(fits.data.memory_ids) == 2
    async with pool.acquire() as conn:
        contents = sorted(r[0] for r in await conn.fetch(
            "SELECT content FROM server_memories WHERE server_id = $1", server_id))
        assert await event_subjects(conn, over.command_id) == []
    assert contents == ["a", "b", "old #0", "old #1", "old #2"]


async def test_batch_with_one_line_too_long_adds_nothing(pool):
    ws = unique()

    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)

    result, _ = await run(service(pool, max_memory_length=10), manual(ws, action="add_batch",
                                                                      contents=["short", "z" * 11]))

    assert result.data.status == CONTENT_TOO_LONG
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM server_memories WHERE server_id = $1", server_id) == 0


async def test_personal_batch_for_a_hosted_identity(pool):
    ws, host, proxy = unique(), unique(), new_proxy_id()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, host)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])

    result, _ = await run(service(pool), manual(ws, scope="personal", actor=host, identity_id=proxy, lineage=0,
                                                action="add_batch", contents=["one", "two", "ONE"]))

    assert result.data.status == ADDED and result.data.skipped_duplicates == 1
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT content, persona_lineage_id FROM personal_memories WHERE user_id = $1"
                                " ORDER BY personal_memory_id", proxy_uid)
    assert [(r[0], r[1]) for r in rows] == [("one", 0), ("two", 0)]


# --- the inbox ----------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["add", "add_batch", "edit", "remove"])
async def test_the_same_command_twice_has_one_effect_and_one_result(pool, action):
    ws, memory_id, _ = await seeded_server(pool)
    cmd = manual(ws, action=action, memory_id=memory_id, content="new text", contents=["x", "y"])
    svc = service(pool)

    first = await svc.run(cmd)
    second = await svc.run(cmd)
    concurrent = await asyncio.gather(*(svc.run(cmd) for _ in range(4)))

    assert not first.duplicate and second.duplicate and all(h.duplicate for h in concurrent)
    # The repeats answer the stored result: the same JSON (its key order is the database's).
    decoded = [msgspec.json.decode(h.answer.result) for h in (first, second, *concurrent)]
    assert all(d == decoded[0] for d in decoded)
    assert decoded[0]["data"]["status"] == {"add": ADDED, "add_batch": ADDED, "edit": UPDATED,
                                            "remove": REMOVED}[action]
    async with pool.acquire() as conn:
        count = await conn.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                                    " WHERE s.server_disc_id = $1", ws)
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == 1
        events = await event_subjects(conn, cmd.command_id)
    assert count == {"add": 2, "add_batch": 4, "edit": 1, "remove": 0}[action]
    assert len(events) == {"add": 2, "add_batch": 4, "edit": 2, "remove": 2}[action]


async def test_a_global_add_cannot_push_a_full_lineage_over_its_cap(pool):
    """Every lineage's cap counts lineage-0 rows, so a global add is refused while any lineage is full."""
    user = unique()
    async with pool.acquire() as conn:
        user_id = await add_user(conn, user)
        await add_personal_memories(conn, user_id, 7, [1, 2, 3, 4, 5])  # lineage 7 at the cap of 5
    result, handled = await run(service(pool, max_personal_memories=5),
                                manual(unique(), scope="personal", actor=user, lineage=0, content="a global fact"))
    assert result.data.status == LIMIT_REACHED
    assert handled.events == []
