"""One memory.create result per status (docs/design.md, sections 3.4, 4 and 5), through the running worker.

Each test sets up what a bot's database would hold (directory.py), sends the command over
NATS with MemoryClient like a bot, checks the result the model would see, and counts the
memory rows to check the effect (or that there was none).
"""

from __future__ import annotations

import json

import pytest

from contracts.codec import RESULT_DECODER
from contracts.kinds.create import (
    AMBIGUOUS_USER,
    DISABLED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    INVALID_CONTENT,
    LIMIT_EXCEEDED,
    PRIVACY_RESTRICTED,
    SAVED,
    SAVED_WITH_EVICTION,
    USER_NOT_FOUND,
)
from contracts.result_parts import CacheKey
from tests.e2e.bus import RAG, command_payload, create_fields, publish_command, unique
from tests.e2e.directory import add_old_server_memories, personal_memories, server_memories
from tests.support.directory import add_server, add_user

LINEAGE = 7


def assert_refused(result, status: str) -> None:
    assert result.data.status == status, result
    assert result.success is False
    assert result.data.memory_id is None
    # Failures carry TomoriBot's words, in both places models read (they differ where its differ).
    assert result.error and result.data.reason


# --- memory_saved_successfully ---------------------------------------------------------------

async def test_saved_server_wide(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, "  {user} calls the mascot {{Otter}} and {bot} agrees  ",
                                               lineage_id=LINEAGE))

    assert result.success is True
    assert result.error is None
    assert result.data.status == SAVED
    assert result.data.scope == "server_wide"
    assert result.data.content_forgotten is None
    # Trimmed; the bot's placeholders kept, any other brace token reduced to its word.
    assert result.data.content_saved == "{user} calls the mascot Otter and {bot} agrees"
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    rows = await server_memories(bot_db, ws)
    assert [(r["id"], r["lineage_id"], r["content"], r["manually_written"], r["source"]) for r in rows] == [
        (result.data.memory_id, LINEAGE, "{user} calls the mascot Otter and {bot} agrees", False, "model")
    ]


async def test_saved_for_known_user_by_display_name(e2e_worker, memory, bot_db):
    ws, alice, bob, a_bot = unique(), unique(), unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, alice)
    await add_user(bot_db, bob)
    members = [
        {"id": bob, "display_name": "Bobby", "username": "bob"},
        {"id": alice, "display_name": "Alice Liddell", "username": "alice_l", "global_name": "Al"},
        # Bots are never targets, even when their name matches too.
        {"id": a_bot, "display_name": "Alice Liddell", "username": "alicebot", "is_bot": True},
    ]

    result = await memory.create(create_fields(ws, "{user} is afraid of cats", scope="target_user",
                                               target=" @alice   LIDDELL ", member_matches=members))

    assert result.data.status == SAVED, result
    assert result.success is True
    assert result.data.scope == "target_user"
    assert result.data.target_user == "Alice Liddell (@alice_l)"  # TomoriBot's label
    assert result.invalidated == [CacheKey("user", alice)]
    rows = await personal_memories(bot_db, alice)
    assert [(r["id"], r["lineage_id"], r["content"], r["manually_written"]) for r in rows] == [
        (result.data.memory_id, LINEAGE, "{user} is afraid of cats", False)
    ]
    assert await personal_memories(bot_db, bob) == []
    assert await server_memories(bot_db, ws) == []


# --- memory_saved_with_eviction --------------------------------------------------------------

async def test_saved_with_eviction_forgets_the_oldest(e2e_worker, memory, bot_db):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True)
    # Inserted out of age order, so "lowest id" and "oldest" are different rows.
    ages = [60, 61, 64, 62, 63]
    ids = await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"legacy fact {a}d", a) for a in ages])
    oldest = ids[ages.index(max(ages))]

    result = await memory.create(create_fields(ws, "the server moved to Lisbon", lineage_id=LINEAGE,
                                               retrieval=RAG))

    assert result.data.status == SAVED_WITH_EVICTION, result
    assert result.success is True
    assert result.data.scope == "server_wide"
    assert result.data.content_saved == "the server moved to Lisbon"
    assert result.data.content_forgotten == "legacy fact 64d"
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    rows = await server_memories(bot_db, ws, LINEAGE)
    assert len(rows) == 5
    assert {r["id"] for r in rows} == (set(ids) - {oldest}) | {result.data.memory_id}
    assert result.data.memory_id not in ids


# --- memory_save_failed_invalid_args ---------------------------------------------------------

@pytest.mark.parametrize(("tool_args", "parameter"), [
    ({"memory_content": "likes tea", "memory_scope": "everywhere"}, "memory_scope"),
    ({"memory_content": "likes tea"}, "memory_scope"),
    ({"memory_content": 42, "memory_scope": "server_wide"}, "memory_content"),
    ({"memory_content": "   ", "memory_scope": "server_wide"}, "memory_content"),
    ({"memory_scope": "server_wide"}, "memory_content"),
    ({"memory_content": "likes tea", "memory_scope": "target_user"}, "target_user"),
    ({"memory_content": "likes tea", "memory_scope": "target_user", "target_user": ["bob"]}, "target_user"),
], ids=["scope-enum", "scope-missing", "content-type", "content-blank", "content-missing", "target-missing",
        "target-type"])
async def test_invalid_args_names_the_parameter(e2e_worker, memory, bot_db, tool_args, parameter):
    ws = unique()
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, tool_args=tool_args))

    assert_refused(result, INVALID_ARGS)
    assert parameter in result.data.reason
    assert await server_memories(bot_db, ws) == []


# Numbers JSON allows that no double holds (JSON.parse reads them as Infinity), and one
# beyond 2^64: a model's bad argument, never a refused command.
BEYOND_A_DOUBLE = ["1e400", "-1e400", "1" + "0" * 5000, "123456789012345678901234567890"]


@pytest.mark.parametrize("number", BEYOND_A_DOUBLE, ids=lambda n: n[:12])
@pytest.mark.parametrize("parameter", ["memory_content", "memory_scope", "target_user"])
async def test_invalid_args_for_any_number_json_allows(e2e_worker, nc, inbox, bot_db, parameter, number):
    ws, cid = unique(), unique("beyond-")
    await add_server(bot_db, ws)
    tool_args = {"memory_content": "likes tea", "memory_scope": "target_user", "target_user": "Mika",
                 parameter: "\x01number\x01"}
    payload = command_payload(create_fields(ws, tool_args=tool_args), command_id=cid, reply_to=inbox.subject(cid))
    data = json.dumps(payload).replace(json.dumps("\x01number\x01"), number).encode()

    await publish_command(nc, "create", ws, data, msg_id=cid)
    result = RESULT_DECODER.decode((await inbox.wait_for([inbox.subject(cid)]))[inbox.subject(cid)])

    assert_refused(result, INVALID_ARGS)
    assert f"Parameter '{parameter}' expected type 'string' but got 'number'" in (result.error or ""), result.error
    assert await server_memories(bot_db, ws) == []


# --- memory_save_failed_disabled -------------------------------------------------------------

async def test_disabled_when_self_teaching_is_off(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws, self_teaching=False)

    result = await memory.create(create_fields(ws, "likes tea"))

    assert_refused(result, DISABLED)
    assert result.error == "Self-teaching is disabled for this server"
    assert await server_memories(bot_db, ws) == []

    # The setting is read at processing time: once the bot turns it back on, saves work.
    await add_server(bot_db, ws, self_teaching=True)
    again = await memory.create(create_fields(ws, "likes tea"))
    assert again.data.status == SAVED, again
    assert len(await server_memories(bot_db, ws)) == 1


# --- memory_save_failed_internal_error -------------------------------------------------------

async def test_internal_error_for_lineage_zero(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, "likes tea", lineage_id=0))

    assert_refused(result, INTERNAL_ERROR)
    assert result.error == "Internal configuration error: this persona has an invalid lineage ID."
    assert await server_memories(bot_db, ws) == []


async def test_internal_error_for_a_triggerer_the_bot_does_not_know(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, "likes tea", triggerer={"id": unique(), "name": "new"}))

    assert_refused(result, INTERNAL_ERROR)
    assert result.error == "Internal bot error: Critical state information is missing"
    assert await server_memories(bot_db, ws) == []


# --- memory_save_failed_ambiguous_user -------------------------------------------------------

@pytest.mark.parametrize("matching", [2, 4])
async def test_ambiguous_user_lists_candidates(e2e_worker, memory, bot_db, matching):
    ws = unique()
    await add_server(bot_db, ws)
    sams = [unique() for _ in range(matching)]
    for sam in sams:
        await add_user(bot_db, sam)
    members = [{"id": sam, "display_name": "Sam", "username": f"sam_{i}"} for i, sam in enumerate(sams)]
    members.insert(1, {"id": unique(), "display_name": "Samantha", "username": "samantha"})

    result = await memory.create(create_fields(ws, "{user} plays chess", scope="target_user", target="Sam",
                                               member_matches=members))

    assert_refused(result, AMBIGUOUS_USER)
    candidates = result.data.candidates
    assert isinstance(candidates, list)
    assert len(candidates) == min(matching, 3)
    assert len(set(candidates)) == len(candidates)
    assert all("Sam" in c and "Samantha" not in c for c in candidates), candidates
    for c in candidates:
        assert c in result.error
    assert result.data.reason == "Multiple users matched the requested target."
    for sam in sams:
        assert await personal_memories(bot_db, sam) == []


# --- memory_save_failed_user_not_found -------------------------------------------------------

async def test_user_not_found_when_nobody_matches(e2e_worker, memory, bot_db):
    ws, bob = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, bob)

    result = await memory.create(create_fields(
        ws, "{user} likes tea", scope="target_user", target="Bo",  # no prefix matching
        member_matches=[{"id": bob, "display_name": "Bob", "username": "bobby"}]))

    assert_refused(result, USER_NOT_FOUND)
    assert await personal_memories(bot_db, bob) == []
    assert await server_memories(bot_db, ws) == []


async def test_user_not_found_when_the_bot_does_not_know_them(e2e_worker, memory, bot_db):
    ws, stranger = unique(), unique()
    await add_server(bot_db, ws)  # no users row for `stranger`

    result = await memory.create(create_fields(
        ws, "{user} likes tea", scope="target_user", target="Newcomer",
        member_matches=[{"id": stranger, "display_name": "Newcomer", "username": "newcomer"}]))

    assert_refused(result, USER_NOT_FOUND)
    assert await bot_db.fetchval("SELECT count(*) FROM users WHERE user_disc_id = $1", stranger) == 0
    assert await server_memories(bot_db, ws) == []


# --- memory_save_failed_invalid_content ------------------------------------------------------

OTTER = "\N{OTTER}"  # outside the BMP: one Python character, two UTF-16 code units


@pytest.mark.parametrize(("content", "status"), [
    ("a" * 1001, INVALID_CONTENT),
    ("a" * 999 + OTTER, INVALID_CONTENT),  # 1000 code points, 1001 UTF-16 units
    ("a" * 998 + OTTER, SAVED),  # exactly 1000 UTF-16 units
    ("  " + "a" * 1000 + "  ", SAVED),  # length is counted after trimming
], ids=["ascii-1001", "emoji-1001", "emoji-1000", "trimmed-1000"])
async def test_content_length_in_utf16_units(e2e_worker, memory, bot_db, content, status):
    ws = unique()
    await add_server(bot_db, ws)

    result = await memory.create(create_fields(ws, content))

    rows = await server_memories(bot_db, ws)
    if status == SAVED:
        assert result.data.status == SAVED, result
        assert [r["content"] for r in rows] == [content.strip()]
    else:
        assert_refused(result, INVALID_CONTENT)
        assert result.data.reason == "Memory content exceeds maximum length of 1000 characters"
        assert rows == []


# --- memory_save_failed_privacy_restricted ---------------------------------------------------

@pytest.mark.parametrize("privacy_level", [1, 2])
async def test_privacy_restricted(e2e_worker, memory, bot_db, privacy_level):
    ws, carol = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, carol, privacy=privacy_level)

    result = await memory.create(create_fields(
        ws, "{user} lives in Porto", scope="target_user", target="Carol",
        member_matches=[{"id": carol, "display_name": "Carol", "username": "carol"}]))

    assert_refused(result, PRIVACY_RESTRICTED)
    assert "/personal config" in result.data.reason
    assert await personal_memories(bot_db, carol) == []
    assert await server_memories(bot_db, ws) == []


# --- memory_save_failed_limit_exceeded -------------------------------------------------------

async def test_limit_exceeded_with_decay_off(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws, decay=False)
    for i in range(5):
        r = await memory.create(create_fields(ws, f"fact {i}", lineage_id=LINEAGE, retrieval=RAG))
        assert r.data.status == SAVED, r

    result = await memory.create(create_fields(ws, "fact 5", lineage_id=LINEAGE, retrieval=RAG))

    assert_refused(result, LIMIT_EXCEEDED)
    assert result.data.current_count == 5
    assert result.data.max_allowed == 5
    assert result.error == "Server memory limit reached. This server can have up to 5 memories (currently: 5)."
    assert "/memories" in result.data.reason
    assert [r["content"] for r in await server_memories(bot_db, ws, LINEAGE)] == [f"fact {i}" for i in range(5)]


@pytest.mark.parametrize("why", ["retrieval-unavailable", "no-embedding-model", "nothing-dormant", "manual-rows"])
async def test_limit_exceeded_when_no_row_may_be_replaced(e2e_worker, memory, bot_db, why):
    ws = unique()
    server_id = await add_server(bot_db, ws, decay=True, decay_days=30)
    retrieval = RAG
    if why == "retrieval-unavailable":
        retrieval = {**RAG, "rag_available": False}
    elif why == "no-embedding-model":
        retrieval = {**RAG, "embedding_model": "  "}
    age = 10 if why == "nothing-dormant" else 60
    await add_old_server_memories(bot_db, server_id, LINEAGE, [(f"old {i}", age + i) for i in range(5)],
                                  manually_written=why == "manual-rows")
    # Old rows of another lineage are never eligible either.
    await add_old_server_memories(bot_db, server_id, LINEAGE + 1, [("other lineage", 90)])
    before = await server_memories(bot_db, ws)

    result = await memory.create(create_fields(ws, "new fact", lineage_id=LINEAGE, retrieval=retrieval))

    assert_refused(result, LIMIT_EXCEEDED)
    assert result.data.current_count == 5
    assert result.data.max_allowed == 5
    assert await server_memories(bot_db, ws) == before
