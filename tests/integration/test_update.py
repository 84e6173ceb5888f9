"""memory.update on real PostgreSQL, in both database modes (docs/design.md, section 8.4): an edit and a
delete of a server and of a personal memory with their effect on the tables, their inbox row and their
events; what the lock re-reads (privacy and a proxy's hosts, for an edit only); the lineage rule; the
footer variants; a repeat answered from the inbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from contracts.codec import UPDATE_RESULT_DECODER
from contracts.events import CacheInvalidate, MemoryRemoved, MemoryUpdated
from contracts.kinds.update import (
    MEMORY_DELETED,
    MEMORY_UPDATED,
    UPDATE_DISABLED,
    UPDATE_NOT_FOUND,
    UPDATE_PRIVACY_RESTRICTED,
    UPDATE_USER_NOT_FOUND,
    UpdateMemory,
    UpdateResult,
)
from contracts.result_parts import CacheKey
from db.repository import MemoryRepository
from tests.conftest import unique
from tests.support.commands import update_command
from worker.domain.workspace import Limits
from worker.kinds.update.service import UpdateMemoryService
from worker.services.base import Handled

from .worlds import MODES, World, world

LINEAGE = 4242
OTHER_LINEAGE = 77
FOOTERS = "genai.self_teach."


@pytest.fixture(scope="module", params=MODES)
async def db(request, pg_server, template_db):
    async with world(request.param, pg_server, template_db) as w:
        yield w


def update(ws: str, memory_id: object, content: object, *, target: str | None = None, member: str | None = None,
           **extra) -> UpdateMemory:
    if member is not None:
        extra["member_matches"] = [{"id": member, "display_name": target}]
    return update_command(ws, memory_id, content, target=target, lineage_id=LINEAGE, **extra)


async def run(db: World, cmd: UpdateMemory, delivery: int | None = None) -> tuple[UpdateResult, Handled]:
    handled = await UpdateMemoryService(MemoryRepository(db.pool), Limits(max_memory_length=60)).run(cmd, delivery)
    return UPDATE_RESULT_DECODER.decode(handled.answer.result), handled


def events(handled: Handled) -> list[tuple[str, dict]]:
    return [(row.subject, msgspec.json.decode(bytes(row.payload))) for row in handled.events]


async def server_row(db: World, memory_id: int):
    return await db.pool.fetchrow("SELECT * FROM server_memories WHERE server_memory_id = $1", memory_id)


async def personal_row(db: World, memory_id: int):
    return await db.pool.fetchrow("SELECT * FROM personal_memories WHERE personal_memory_id = $1", memory_id)


def recent(at: datetime | None) -> bool:
    """A timestamp of this test's transaction (TomoriBot's columns are naive UTC)."""
    if at is None:
        return False
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return datetime.now(UTC) - at < timedelta(minutes=5)


async def test_a_server_edit_keeps_the_rows_protection_tags_and_source_and_refreshes_its_dormancy(db):
    ws, server_id = await db.workspace()
    memory_id = await db.server_memory(server_id, LINEAGE, "The mascot is a fox", tags=["lore"], manual=True)

    result, handled = await run(db, update(ws, memory_id, "  The mascot is a {{fox}} named {bot}  "))

    assert result.success and result.message == "Server memory updated successfully", result
    assert (result.data.status, result.data.scope, result.data.memory_id) == (
        MEMORY_UPDATED, "server_wide", memory_id)
    assert result.data.content_saved == "The mascot is a fox named {bot}"  # sanitized as a create is
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    row = await server_row(db, memory_id)
    assert row["content"] == "The mascot is a fox named {bot}"
    assert (list(row["tags"]), row["manually_written"], row["source"]) == (["lore"], True, "legacy")
    assert recent(row["last_reinforced_at"]) and recent(row["updated_at"]) and not recent(row["created_at"])
    (inv_subject, inv), (subject, payload) = events(handled)
    assert inv_subject == f"cache.invalidate.tomori_state.{ws}" and inv["reason"] == "memory_updated"
    msgspec.convert(inv, CacheInvalidate)
    updated = msgspec.convert(payload, MemoryUpdated)
    assert subject == f"memory.updated.server.{ws}"
    assert (updated.content, updated.content_before, updated.source, updated.manually_written, updated.lineage_id) == (
        "The mascot is a fox named {bot}", "The mascot is a fox", "legacy", True, LINEAGE)
    embed = result.notice["embed"]
    assert embed["color"] == "memory_update" and embed["title_key"] == f"{FOOTERS}server_memory_updated_title"
    assert embed["description_vars"] == {"memory_id": str(memory_id), "memory_content": "The mascot is a fox named {bot}"}
    assert embed["footer_key"] == f"{FOOTERS}server_memory_footer" and embed["ref"] is None
    assert updated.notice == result.notice
    stored = await db.pool.fetchrow("SELECT kind, status, result, decision, facts FROM processed_commands"
                                    " WHERE command_id = $1", result.command_id)
    assert (stored["kind"], stored["status"], stored["result"]) == ("update", None, None)
    assert msgspec.json.decode(stored["facts"]) == {
        "outcome": "updated", "content_before": "The mascot is a fox", "lineage_id": LINEAGE, "source": "legacy",
        "manually_written": True}


async def test_a_blank_content_deletes_a_server_memory_and_publishes_memory_removed(db):
    ws, server_id = await db.workspace()
    memory_id = await db.server_memory(server_id, LINEAGE, "Movie night is on Friday")

    result, handled = await run(db, update(ws, memory_id, " \n\t "))

    assert (result.data.status, result.message, result.data.content_deleted) == (
        MEMORY_DELETED, "Server memory deleted successfully", "Movie night is on Friday")
    assert await server_row(db, memory_id) is None
    (_, inv), (subject, payload) = events(handled)
    assert inv["reason"] == "memory_deleted" and subject == f"memory.removed.server.{ws}"
    gone = msgspec.convert(payload, MemoryRemoved)
    assert (gone.memory_id, gone.content, gone.lineage_id, gone.owner_id) == (
        memory_id, "Movie night is on Friday", LINEAGE, ws)
    embed = result.notice["embed"]
    assert (embed["color"], embed["title_key"], embed["full_content"], embed["ref"]) == (
        "error", f"{FOOTERS}server_memory_deleted_title", "Movie night is on Friday", None)


async def test_a_server_memory_is_found_only_in_its_workspace_and_exactly_its_lineage(db):
    ws, server_id = await db.workspace()
    other_ws, other_server = await db.workspace()
    elsewhere = await db.server_memory(other_server, LINEAGE, "another server's")
    other_lineage = await db.server_memory(server_id, OTHER_LINEAGE, "another persona's")
    global_row = await db.server_memory(server_id, 0, "lineage 0")

    for memory_id in (elsewhere, other_lineage, global_row, 2**53 - 1):
        for content in ("new text", ""):
            result, handled = await run(db, update(ws, memory_id, content))
            assert (result.data.status, result.error, result.data.reason) == (
                UPDATE_NOT_FOUND, "Memory ID not found in this server", "Memory ID not found in this server")
            assert handled.events == [] and result.invalidated == [] and result.notice is None
    for memory_id, content in ((elsewhere, "another server's"), (other_lineage, "another persona's"),
                               (global_row, "lineage 0")):
        assert (await server_row(db, memory_id))["content"] == content


async def test_a_personal_memory_of_the_lineage_or_global_is_edited_and_deleted_on_the_users_subjects(db):
    ws, _ = await db.workspace()
    mika, user_id = await db.user()
    own = await db.personal_memory(user_id, LINEAGE, "{user} plays the violin")
    shared = await db.personal_memory(user_id, 0, "{user} likes green tea")
    foreign = await db.personal_memory(user_id, OTHER_LINEAGE, "another persona's")

    edited, handled = await run(db, update(ws, own, "{user} plays the cello", target="Mika", member=mika))
    deleted, deleted_events = await run(db, update(ws, shared, "", target="Mika", member=mika))
    missed, _ = await run(db, update(ws, foreign, "x", target="Mika", member=mika))

    assert (edited.data.status, edited.data.target_user, edited.message) == (
        MEMORY_UPDATED, "Mika", "Personal memory updated successfully")
    assert (deleted.data.status, deleted.data.content_deleted, deleted.data.scope) == (
        MEMORY_DELETED, "{user} likes green tea", "target_user")
    assert (missed.data.status, missed.error) == (UPDATE_NOT_FOUND, "Personal memory ID not found")
    assert (await personal_row(db, own))["content"] == "{user} plays the cello"
    assert await personal_row(db, shared) is None and (await personal_row(db, foreign)) is not None
    assert [s for s, _ in events(handled)] == [f"cache.invalidate.user.{mika}", f"memory.updated.personal.{mika}"]
    assert [s for s, _ in events(deleted_events)] == [f"cache.invalidate.user.{mika}", f"memory.removed.personal.{mika}"]
    assert events(deleted_events)[1][1]["lineage_id"] == 0
    embed = edited.notice["embed"]
    assert embed["title_vars"] == {"user_nickname": "Mika", "persona_nickname": "Tomori"}
    assert embed["footer_key"] == f"{FOOTERS}personal_memory_footer_manage"


async def test_privacy_read_under_the_lock_blocks_an_edit_never_a_delete(db):
    ws, _ = await db.workspace()
    for level in (1, 2):
        person, user_id = await db.user(privacy=level)
        kept = await db.personal_memory(user_id, LINEAGE, "{user} hikes")
        gone = await db.personal_memory(user_id, LINEAGE, "{user} swims")

        refused, handled = await run(db, update(ws, kept, "{user} climbs", target="Rin", member=person))
        deleted, _ = await run(db, update(ws, gone, "", target="Rin", member=person))

        assert (refused.data.status, refused.error, refused.data.reason) == (
            UPDATE_PRIVACY_RESTRICTED, "Cannot update personal memory: Rin has privacy restrictions.",
            "The user Rin has chosen to restrict personal memory storage.")
        assert handled.events == [] and (await personal_row(db, kept))["content"] == "{user} hikes"
        assert deleted.data.status == MEMORY_DELETED and await personal_row(db, gone) is None


async def test_a_proxy_identitys_host_blocks_an_edit_and_marks_a_deletes_footer(db):
    ws, _ = await db.workspace()
    host, _ = await db.user(privacy=2)
    identity, user_id = await db.proxy([host])
    orphan, orphan_id = await db.proxy([])
    kept = await db.personal_memory(user_id, LINEAGE, "{user} is a fox")
    gone = await db.personal_memory(user_id, LINEAGE, "{user} is a wolf")
    orphan_row = await db.personal_memory(orphan_id, LINEAGE, "{user} is a cat")
    fox = [{"id": identity, "kind": "proxy", "label": "Fox", "aliases": ["Fox"]}]

    refused, _ = await run(db, update(ws, kept, "{user} is a red fox", target="Fox", participants=fox))
    deleted, _ = await run(db, update(ws, gone, "", target="Fox", participants=fox))
    no_host, _ = await run(db, update(ws, orphan_row, "{user} is a lynx", target="Cat",
                                      participants=[{"id": orphan, "kind": "proxy", "label": "Cat", "aliases": ["Cat"]}]))

    assert (refused.data.status, refused.data.reason) == (
        UPDATE_PRIVACY_RESTRICTED, "The host account for Fox has full privacy enabled. I cannot update "
                                         "personal memories for its message-proxy identities.")
    assert (await personal_row(db, kept))["content"] == "{user} is a fox"
    assert deleted.data.status == MEMORY_DELETED
    assert deleted.notice["embed"]["footer_key"] == f"{FOOTERS}personal_memory_footer_user_blacklisted"
    assert (no_host.data.status, no_host.data.reason) == (
        UPDATE_PRIVACY_RESTRICTED, "The host account for Cat could not be found. I cannot update personal "
                                         "memories for its message-proxy identities.")


async def test_the_footer_says_personalization_is_off_or_the_target_is_blacklisted(db):
    off_ws, _ = await db.workspace(personal_memories=False)
    ws, server_id = await db.workspace()
    person, user_id = await db.user()
    await db.blacklist(server_id, person)
    first = await db.personal_memory(user_id, LINEAGE, "{user} sings")
    second = await db.personal_memory(user_id, LINEAGE, "{user} dances")

    off, _ = await run(db, update(off_ws, first, "{user} sings opera", target="Ann", member=person))
    banned, _ = await run(db, update(ws, second, "{user} dances salsa", target="Ann", member=person))

    assert off.data.status == banned.data.status == MEMORY_UPDATED  # neither refuses
    assert off.notice["embed"]["footer_key"] == f"{FOOTERS}personal_memory_footer_personalization_disabled"
    assert banned.notice["embed"]["footer_key"] == f"{FOOTERS}personal_memory_footer_user_blacklisted"


async def test_self_teaching_off_and_an_unknown_user_refuse_before_anything_is_locked(db):
    quiet, server_id = await db.workspace(self_teaching=False)
    memory_id = await db.server_memory(server_id, LINEAGE, "kept")
    stranger = unique()

    disabled, _ = await run(db, update(quiet, memory_id, "changed"))
    unknown, _ = await run(db, update(quiet, memory_id, "changed", target="Zed", member=stranger,
                                      tool_args={"memory_id": memory_id, "memory_content": "x", "target_user": "Zed"}))

    assert (disabled.data.status, disabled.error, disabled.data.reason) == (
        UPDATE_DISABLED, "Self-teaching is disabled for this server",
        "Self-teaching functionality is disabled for this server")
    assert unknown.data.status == UPDATE_DISABLED  # self-teaching comes first
    ws, _ = await db.workspace()
    unknown, _ = await run(db, update(ws, memory_id, "x", target="Zed", member=stranger))
    assert (unknown.data.status, unknown.error) == (
        UPDATE_USER_NOT_FOUND, "I don't know Zed yet, so this personal memory cannot be updated.")
    assert (await server_row(db, memory_id))["content"] == "kept"
    assert await db.pool.fetchval("SELECT decision ->> 'decided' FROM processed_commands WHERE command_id = $1",
                                  unknown.command_id) == "user_not_found"


async def test_a_repeat_is_answered_from_the_inbox_and_only_its_own_delivery_republishes(db):
    ws, server_id = await db.workspace()
    memory_id = await db.server_memory(server_id, LINEAGE, "v1")
    cmd = update(ws, memory_id, "v2")

    first, handled = await run(db, cmd, delivery=11)
    await db.pool.execute("UPDATE server_memories SET content = 'v3' WHERE server_memory_id = $1", memory_id)
    again, redelivered = await run(db, cmd, delivery=11)
    other, other_message = await run(db, cmd, delivery=12)

    assert handled.answer.result == redelivered.answer.result == other_message.answer.result
    assert first == again == other and first.data.content_saved == "v2"
    assert redelivered.duplicate and [e.headers for e in redelivered.events] == [e.headers for e in handled.events]
    assert other_message.events == []
    assert (await server_row(db, memory_id))["content"] == "v3"  # applied once
