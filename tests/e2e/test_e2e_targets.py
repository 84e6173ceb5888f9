"""Who `target_user` names, end to end (docs/design.md, section 4 step 6): where the memory lands."""

from __future__ import annotations

from contracts.kinds.create import SAVED, USER_NOT_FOUND
from contracts.result_parts import CacheKey
from tests.e2e.bus import BOT_ID, create_fields, unique
from tests.e2e.directory import personal_memories, server_memories
from tests.support.directory import add_server, add_user, set_persona_nickname

LINEAGE = 5


async def test_self_is_saved_server_wide_once_it_names_someone(e2e_worker, memory, bot_db):
    """TomoriBot turns a target_user save server-wide when the request is "self" and resolved."""
    ws = unique()
    await add_server(bot_db, ws)
    persona = [{"id": BOT_ID, "label": "Tomori", "aliases": ["Tomori", "self"]}]

    result = await memory.create(create_fields(ws, "{bot} prefers rainy days", scope="target_user", target="SELF",
                                               participants=persona))

    assert result.data.status == SAVED, result
    assert result.data.scope == "server_wide"
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["{bot} prefers rainy days"]
    # "self" that names nobody is nobody.
    alone = await memory.create(create_fields(ws, "{bot} likes fog", scope="target_user", target="self"))
    assert alone.data.status == USER_NOT_FOUND, alone


async def test_the_bots_own_id_is_saved_server_wide(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, BOT_ID)
    persona = [{"id": BOT_ID, "label": "Tomori", "aliases": ["Tomori"]}]

    result = await memory.create(create_fields(
        ws, "{bot} hums when thinking", scope="target_user", target=BOT_ID, participants=persona,
        member_matches=[{"id": BOT_ID, "display_name": "Tomori", "is_bot": True}]))

    assert result.data.status == SAVED, result
    assert result.data.scope == "server_wide"
    assert await personal_memories(bot_db, BOT_ID) == []
    assert [r["content"] for r in await server_memories(bot_db, ws)] == ["{bot} hums when thinking"]


async def test_matrix_bridge_user_becomes_a_server_fact_naming_them(e2e_worker, memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    participants = [{"id": "@alice:matrix.org", "kind": "matrix", "label": "Alice (Matrix)"}]

    result = await memory.create(create_fields(ws, "{user} plays the cello; {{user}} tunes it daily",
                                               scope="target_user", target="@alice:matrix.org",
                                               participants=participants))

    assert result.data.status == SAVED, result
    assert result.data.scope == "server_wide"
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    # Only the exact {user} is replaced, as TomoriBot's replaceAll does: {{user}} becomes {Alice},
    # which the cleaning then reduces to its word.
    assert [r["content"] for r in await server_memories(bot_db, ws)] == [
        "Alice plays the cello; Alice tunes it daily"]


async def test_member_name_stages_in_order(e2e_worker, memory, bot_db):
    """Display name, persona nickname, saved nickname, global name, username: the first stage
    with a match decides, so a later stage's match elsewhere does not make it ambiguous."""
    ws = unique()
    await add_server(bot_db, ws)
    kim_display, kim_user, eve, gus, hal = unique(), unique(), unique(), unique(), unique()
    for uid in (kim_display, kim_user, hal):
        await add_user(bot_db, uid)
    eve_row = await add_user(bot_db, eve)
    await set_persona_nickname(bot_db, LINEAGE, eve_row, "Evie")
    await add_user(bot_db, gus, nickname="Gussy")
    members = [
        {"id": kim_user, "display_name": "Kimberly", "username": "kim"},
        {"id": kim_display, "display_name": "Kim", "username": "kim_d"},
        {"id": eve, "display_name": "Eve", "username": "eve"},
        {"id": gus, "display_name": "Gus", "username": "gus"},
        {"id": hal, "display_name": "Hal", "global_name": "Harold", "username": "hal9000"},
    ]

    expected = {"kim": kim_display, "evie": eve, "gussy": gus, "harold": hal, "hal9000": hal}
    for target, owner in expected.items():
        result = await memory.create(create_fields(ws, f"{{user}} was called {target}", scope="target_user",
                                                   target=target, lineage_id=LINEAGE, member_matches=members))
        assert result.data.status == SAVED, (target, result)
        assert result.invalidated == [CacheKey("user", owner)], target

    for owner in (kim_display, eve, gus):
        assert len(await personal_memories(bot_db, owner)) == 1
    assert len(await personal_memories(bot_db, hal)) == 2
    assert await personal_memories(bot_db, kim_user) == []


async def test_persona_nickname_of_another_lineage_does_not_match(e2e_worker, memory, bot_db):
    ws, eve = unique(), unique()
    await add_server(bot_db, ws)
    eve_row = await add_user(bot_db, eve)
    await set_persona_nickname(bot_db, LINEAGE + 1, eve_row, "Evie")

    result = await memory.create(create_fields(
        ws, "{user} likes tea", scope="target_user", target="Evie", lineage_id=LINEAGE,
        member_matches=[{"id": eve, "display_name": "Eve", "username": "eve"}]))

    assert result.data.status == USER_NOT_FOUND, result
    assert await personal_memories(bot_db, eve) == []


async def test_dm_resolves_participants_but_not_member_matches(e2e_worker, memory, bot_db):
    zed, yan = unique(), unique()
    ws = zed  # a DM workspace is the user's id
    await add_server(bot_db, ws)
    await add_user(bot_db, zed)
    await add_user(bot_db, yan)
    participants = [{"id": zed, "kind": "discord", "label": "Zed", "aliases": ["Zeddy"]}]
    members = [{"id": yan, "display_name": "Yan", "username": "yan"}]

    by_alias = await memory.create(create_fields(ws, "{user} is a night owl", scope="target_user", target="zeddy",
                                                 participants=participants, member_matches=members, is_dm=True))
    by_member = await memory.create(create_fields(ws, "{user} likes tea", scope="target_user", target="Yan",
                                                  participants=participants, member_matches=members, is_dm=True))

    assert by_alias.data.status == SAVED, by_alias
    assert [r["content"] for r in await personal_memories(bot_db, zed)] == ["{user} is a night owl"]
    assert by_member.data.status == USER_NOT_FOUND, by_member
    assert await personal_memories(bot_db, yan) == []


async def test_snowflake_target_and_legacy_alias_parameter(e2e_worker, memory, bot_db):
    ws, ann = unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, ann)
    members = [{"id": ann, "display_name": "Ann", "username": "ann"}]

    by_id = await memory.create(create_fields(ws, tool_args={
        "memory_content": "{user} sings", "memory_scope": "target_user", "target_user_discord_id": ann},
        member_matches=members))
    by_nickname = await memory.create(create_fields(ws, tool_args={
        "memory_content": "{user} dances", "memory_scope": "target_user", "target_user_nickname": "ANN"},
        member_matches=members))

    assert by_id.data.status == SAVED, by_id
    assert by_nickname.data.status == SAVED, by_nickname
    assert [r["content"] for r in await personal_memories(bot_db, ann)] == ["{user} sings", "{user} dances"]


async def test_persona_affixes_and_composed_names(e2e_worker, memory, bot_db):
    """TomoriBot's later stages: the name with a persona affix taken off, then people's composed
    names rebuilt from the naming the database holds (their own affixes for this lineage)."""
    ws, ivy, oak = unique(), unique(), unique()
    await add_server(bot_db, ws)
    await add_user(bot_db, ivy, nickname="Ivy")
    oak_row = await add_user(bot_db, oak, nickname="Oak", addressing_style="masculine")
    await set_persona_nickname(bot_db, LINEAGE, oak_row, None, prefix="Captain")
    members = [{"id": ivy, "display_name": "Ivy Green", "username": "ivy"},
               {"id": oak, "display_name": "Oakley", "username": "oak_1"}]
    persona = {"id": 1, "lineage_id": LINEAGE, "name": "Tomori",
               "naming": {"prefixes": {"neutral": "Master"}, "suffixes": {"masculine": "-kun", "neutral": "-san"}}}

    stripped = await memory.create(create_fields(ws, "{user} paints", scope="target_user", target="Master Ivy-san",
                                                 persona=persona, member_matches=members))
    composed = await memory.create(create_fields(ws, "{user} sails", scope="target_user", target="Captain Oak-kun",
                                                 persona=persona, member_matches=members))

    assert (stripped.data.status, stripped.data.target_user) == (SAVED, "Ivy Green (@ivy)"), stripped
    assert (composed.data.status, composed.data.target_user) == (SAVED, "Oakley (@oak_1)"), composed
    assert [r["content"] for r in await personal_memories(bot_db, ivy)] == ["{user} paints"]
    assert [r["content"] for r in await personal_memories(bot_db, oak)] == ["{user} sails"]
