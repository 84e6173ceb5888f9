"""A TomoriBot database adopted in place, then served over NATS (docs/design.md, section 7.1, issue 15).

The operator's steps as the README gives them, each a `memoryctl` command (in-process): `adopt
--dry-run`, `adopt`, `workspace set --decay on`, then `memoryctl run` (a real process) on the
bot's URL. The
bot's settings then decide: self-teaching off refuses, the saved and the persona nickname
resolve, the notice settings and thought log shape the notice, a FULL-privacy host blocks a
proxy identity, existing rows count against the cap, and a legacy row is evicted when decay
is on. Every bot row is intact afterwards, less what the saves did.

Its own nats-server: the suite's shared worker must not take these commands.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import asyncpg
import nats
import pytest

from contracts.kinds.create import DISABLED, LIMIT_EXCEEDED, PRIVACY_RESTRICTED, SAVED, SAVED_WITH_EVICTION
from contracts.kinds.manual import ALL_DUPLICATES, TEACHING_DISABLED
from contracts.kinds.update import MEMORY_DELETED, MEMORY_UPDATED, UPDATE_DISABLED
from tests import tomoribot
from tests.conftest import WorkerProcess, unique, worker_env
from tests.e2e.bus import RAG, create_fields
from tests.memoryctl import memoryctl as in_process
from tests.support.commands import manual_fields, reinforce_fields, seed_bio_fields, update_fields
from worker.client.memory_client import MemoryClient
from worker.local.embedded import NatsServer

CAPS = {"MAX_SERVER_MEMORIES": "5", "MAX_PERSONAL_MEMORIES": "5"}
CHANNEL_PUBLIC = {"id": "830000000000000001", "is_dm": False, "is_private": False, "everyone_can_view": True,
                  "url": "https://discord.com/channels/1/2/3"}


def memoryctl(dsn: str, *args: str):
    """Awaitable: the operator's command, in-process (tests/memoryctl.py)."""
    return in_process([*args], worker_env("nats://unused", dsn, **CAPS))


@pytest.fixture(scope="module")
async def adopted(pg_server, tmp_root):
    name = f"tomori_{unique()}"
    admin = await asyncpg.connect(pg_server.dsn())
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    dsn = tomoribot.plain_dsn(pg_server.dsn(name))  # the bot's own URL, as an operator has it
    bot = await asyncpg.connect(dsn)
    await tomoribot.build(bot)
    world = await tomoribot.seed(bot)
    before = await tomoribot.snapshot(bot)

    steps = [await memoryctl(dsn, "adopt", "--dry-run"), await memoryctl(dsn, "adopt"),
             await memoryctl(dsn, "workspace", "set", world.taught, "--decay", "on", "--decay-days", "30")]
    for step in steps:
        assert step.returncode == 0, step.stdout + step.stderr
    nats_server = NatsServer(tmp_root / f"nats-{name}").start()
    worker = WorkerProcess(worker_env(nats_server.url, dsn, **CAPS),
                           tmp_root / f"worker-{name}.log")
    await asyncio.to_thread(worker.start)
    nc = await nats.connect(nats_server.url)
    client = await MemoryClient(nc, timeout=20.0).__aenter__()
    try:
        yield SimpleNamespace(world=world, bot=bot, memory=client, before=before, steps=steps,
                              after_adoption=await tomoribot.snapshot(bot), evicted=[], worker=worker)
    finally:
        await client.__aexit__(None, None, None)
        await nc.drain()
        await asyncio.to_thread(worker.stop)
        nats_server.stop()
        await bot.close()


def save(ws: str, content: str, world: tomoribot.World, **over):
    persona = world.persona_quiet if ws == world.quiet else world.persona_taught
    return create_fields(ws, content, lineage_id=world.lineage, persona_id=persona, channel=CHANNEL_PUBLIC, **over)


def member(disc_id: str, display_name: str) -> dict:
    return {"id": disc_id, "display_name": display_name, "username": display_name.lower() + "_0"}


async def personal(bot, disc_id: str) -> list[str]:
    return [r[0] for r in await bot.fetch(
        "SELECT m.content FROM personal_memories m JOIN users u USING (user_id) WHERE u.user_disc_id = $1"
        " ORDER BY m.personal_memory_id", disc_id)]


async def test_the_dry_run_says_what_it_found_and_adoption_changed_no_bot_row(adopted):
    dry = adopted.steps[0].stdout
    assert "bot schema version: 096_minimal_notice_refs (4 migrations in its ledger)" in dry
    assert "server_memories                      6" in dry and "personal_memories                    13" in dry
    assert f"server {adopted.world.taught} lineage {adopted.world.lineage}: 5 of 5" in dry
    assert f"user {adopted.world.full} lineage {adopted.world.lineage} (with global rows): 5 of 5" in dry
    assert f"user {adopted.world.hoarder} lineage {adopted.world.lineage} (with global rows): 6 of 5" in dry
    assert "user_personalization_configs.user_nickname" in dry
    assert "the adopted layout's base db/adopted.sql (the worker's columns on the bot's memory tables" in dry
    assert "nothing was changed (dry run)" in dry
    assert adopted.after_adoption == adopted.before
    assert await adopted.bot.fetchval("SELECT count(*) FROM server_memories WHERE source <> 'legacy'") == 0
    shown = [line.split() for line in adopted.steps[2].stdout.splitlines()]
    assert ["decay", "True"] in shown and ["decay_days", "30"] in shown and ["notice_verbosity", "verbose"] in shown


async def test_self_teaching_off_in_the_bot_refuses(adopted):
    result = await adopted.memory.create(save(adopted.world.quiet, "the quiet server likes jazz", adopted.world))
    assert result.data.status == DISABLED, result


async def test_the_saved_nickname_and_the_persona_nickname_resolve_the_target(adopted):
    w = adopted.world
    members = [member(w.mika, "M"), member(w.banned, "Rex")]
    by_saved = await adopted.memory.create(save(w.taught, "{user} bakes sourdough", w, scope="target_user",
                                                target="mika", member_matches=members))
    by_persona = await adopted.memory.create(save(w.taught, "{user} hates mornings", w, scope="target_user",
                                                  target="Kitten", member_matches=members))
    assert by_saved.data.status == SAVED, by_saved
    assert by_persona.data.status == SAVED, by_persona
    assert (await personal(adopted.bot, w.mika))[-2:] == ["{user} bakes sourdough", "{user} hates mornings"]
    # The bot's verbose setting: the whole card goes to the conversation.
    assert by_saved.notice["verbosity"] == "verbose" and by_saved.notice["conversation"]["mode"] == "card"


async def test_the_bots_hidden_keys_and_thought_log_shape_the_notice(adopted):
    result = await adopted.memory.create(save(adopted.world.hidden, "the server's motto is be kind", adopted.world))
    assert result.data.status == SAVED, result
    assert result.notice["verbosity"] == "minimal" and result.notice["conversation"] is None
    assert result.notice["thought_log"]["channel_id"] == "830000000000000019"
    verbose = await adopted.memory.create(save(adopted.world.taught, "art gets pinned", adopted.world,
                                               retrieval=RAG))
    assert verbose.data.status == SAVED_WITH_EVICTION, verbose
    adopted.evicted.append(verbose.data.content_forgotten)
    # The bot's verbose setting: the eviction card, both contents, in the conversation.
    values = [f["value"] for f in verbose.notice["conversation"]["card"]["fields"]]
    assert "art gets pinned" in values and verbose.data.content_forgotten in values


async def test_a_full_privacy_host_blocks_the_proxy_identity(adopted):
    w = adopted.world
    participants = [{"id": w.proxy, "kind": "proxy", "label": "Nova", "aliases": ["Nova"]}]
    result = await adopted.memory.create(save(w.taught, "{user} loves thunderstorms", w, scope="target_user",
                                              target="nova", participants=participants))
    assert result.data.status == PRIVACY_RESTRICTED, result
    assert await personal(adopted.bot, w.proxy) == []


async def test_existing_rows_count_against_the_cap(adopted):
    w = adopted.world
    result = await adopted.memory.create(save(w.hidden, "{user} knits", w, scope="target_user", target="pat",
                                              member_matches=[member(w.full, "Pat")], retrieval=RAG))
    assert result.data.status == LIMIT_EXCEEDED, result
    assert result.data.current_count == 5 and len(await personal(adopted.bot, w.full)) == 5


async def test_an_owner_above_the_cap_keeps_every_row_and_the_save_is_refused(adopted):
    w = adopted.world
    result = await adopted.memory.create(save(w.taught, "{user} keeps everything", w, scope="target_user",
                                              target="hoa", member_matches=[member(w.hoarder, "Hoa")], retrieval=RAG))
    # Decay is on and every row is dormant, yet nothing is deleted: never more than one row
    # per save, and one would not bring this owner under the cap.
    assert result.data.status == LIMIT_EXCEEDED, result
    assert result.data.current_count == 6 and len(await personal(adopted.bot, w.hoarder)) == 6


async def test_a_legacy_row_is_evicted_when_decay_is_on(adopted):
    w = adopted.world
    result = await adopted.memory.create(save(w.taught, "Game night moved to Saturdays", w, retrieval=RAG))
    assert result.data.status == SAVED_WITH_EVICTION, result
    adopted.evicted.append(result.data.content_forgotten)
    # Never reinforced, oldest first: the two oldest pre-worker rows, one per save.
    assert adopted.evicted == ["The server was founded on a rainy Tuesday", "Movie night is every Friday"]
    rows = await adopted.bot.fetch("SELECT content, source FROM server_memories m JOIN servers s USING (server_id)"
                                   " WHERE s.server_disc_id = $1 ORDER BY server_memory_id", w.taught)
    assert len(rows) == 5 and [r["source"] for r in rows] == ["legacy"] * 3 + ["model"] * 2


async def test_panels_honour_member_teaching_and_dedupe_against_global_rows(adopted):
    w = adopted.world
    base = {"actor": w.mika, "is_manager": False, "lineage_id": w.lineage, "persona_id": w.persona_quiet}
    refused = await adopted.memory.manual({"workspace_id": w.quiet, **manual_fields(content="x", **base)})
    assert refused.data.status == TEACHING_DISABLED, refused
    dup = await adopted.memory.manual({"workspace_id": w.taught, **manual_fields(
        scope="personal", action="add_batch", contents=["{user} LIKES green tea"], **base)})
    assert dup.data.status == ALL_DUPLICATES, dup


async def test_reinforcement_and_bio_seeds_work_on_the_bots_rows(adopted):
    w = adopted.world
    mascot = await adopted.bot.fetchval("SELECT server_memory_id FROM server_memories"
                                        " WHERE content = 'The server mascot is a fox named Kit'")
    done = await adopted.memory.reinforce({"workspace_id": w.taught,
                                           **reinforce_fields([("server", mascot)], lineage_id=w.lineage)})
    assert (done.data.status, done.data.count) == ("reinforced", 1), done
    assert await adopted.bot.fetchval("SELECT reinforcement_count FROM server_memories"
                                      " WHERE server_memory_id = $1", mascot) == 1
    # The PluralKit member's only host is at FULL privacy: its bio is not stored.
    seed = await adopted.memory.seed_bio({"workspace_id": w.taught,
                                          **seed_bio_fields(w.proxy, "Nova, she/her, loves storms")})
    assert seed.data.status == "skipped", seed
    assert await personal(adopted.bot, w.proxy) == []


async def test_every_bot_row_is_intact_after_the_saves(adopted):
    after = await tomoribot.snapshot(adopted.bot)
    for table, rows in adopted.before.items():
        gone = set(rows) - set(after[table])
        new = set(after[table]) - set(rows)
        if table == "server_memories":
            assert sorted(r[5] for r in gone) == sorted(adopted.evicted)  # content is the sixth column
            assert {r[5] for r in new} == {"Game night moved to Saturdays", "art gets pinned",
                                           "the server's motto is be kind"}
        elif table == "personal_memories":
            assert not gone and {r[3] for r in new} == {"{user} bakes sourdough", "{user} hates mornings"}
        else:
            assert after[table] == rows, table


async def test_a_guild_the_bot_never_registered_gets_a_servers_row_which_the_bots_upsert_keeps(adopted):
    """README step 6 and docs/tomoribot.md: the worker registers a guild it has not seen, so the
    bot's plain INSERT of that guild fails, and the upsert they give keeps the worker's row (and
    with it the memory's owner). Runs after the intact-rows check, which this row would change."""
    ws, bot = "810000000000000099", adopted.bot
    result = await adopted.memory.create(save(ws, "the new guild plays chess on Sundays", adopted.world))
    assert result.data.status == SAVED, result
    server_id = await bot.fetchval("SELECT server_id FROM servers WHERE server_disc_id = $1", ws)
    assert server_id is not None
    with pytest.raises(asyncpg.UniqueViolationError):
        await bot.execute("INSERT INTO servers (server_disc_id, registration_locale) VALUES ($1, 'fr')", ws)
    await bot.execute("INSERT INTO servers (server_disc_id, registration_locale) VALUES ($1, 'fr')"
                      " ON CONFLICT (server_disc_id) DO UPDATE SET registration_locale = EXCLUDED.registration_locale", ws)
    row = await bot.fetchrow("SELECT server_id, registration_locale FROM servers WHERE server_disc_id = $1", ws)
    assert tuple(row) == (server_id, "fr")
    assert await bot.fetchval("SELECT content FROM server_memories WHERE server_id = $1", server_id) \
        == "the new guild plays chess on Sundays"


async def test_the_models_update_tool_edits_and_deletes_the_bots_rows(adopted):
    """memory.update on the bot's own rows (issue 37), after the intact-rows check: a personal
    global row edited through the persona nickname the bot keeps, a legacy server row deleted,
    self-teaching off in the bot refusing, each in TomoriBot's words."""
    w, bot = adopted.world, adopted.bot
    tea = await bot.fetchval("SELECT personal_memory_id FROM personal_memories WHERE content = '{user} likes green tea'")
    mods = await bot.fetchval("SELECT server_memory_id FROM server_memories WHERE content = 'Mods prefer pings over DMs'")
    quiet = await bot.fetchval("SELECT server_memory_id FROM server_memories WHERE content = 'Quiet server: no spoilers'")
    base = {"lineage_id": w.lineage, "persona_id": w.persona_taught, "channel": CHANNEL_PUBLIC}

    mika = {"id": w.mika, "display_name": "M", "username": "m"}  # the label is "M" alone
    edited = await adopted.memory.update(update_fields(w.taught, tea, "{user} likes matcha", target="Kitten",
                                                       member_matches=[mika], **base))
    deleted = await adopted.memory.update(update_fields(w.taught, mods, "", **base))
    refused = await adopted.memory.update(update_fields(w.quiet, quiet, "", **{**base, "persona_id": w.persona_quiet}))

    assert (edited.data.status, edited.data.target_user, edited.message) == (
        MEMORY_UPDATED, "M", "Personal memory updated successfully"), edited
    assert edited.notice["verbosity"] == "verbose" and edited.notice["embed"]["footer_key"] == (
        "genai.self_teach.personal_memory_footer_manage")
    row = await bot.fetchrow("SELECT content, persona_lineage_id, manually_written, last_reinforced_at"
                             " FROM personal_memories WHERE personal_memory_id = $1", tea)
    assert (row["content"], row["persona_lineage_id"], row["manually_written"]) == ("{user} likes matcha", 0, False)
    assert row["last_reinforced_at"] is not None
    assert (deleted.data.status, deleted.data.content_deleted) == (MEMORY_DELETED, "Mods prefer pings over DMs")
    assert await bot.fetchval("SELECT count(*) FROM server_memories WHERE server_memory_id = $1", mods) == 0
    assert (refused.data.status, refused.error) == (UPDATE_DISABLED, "Self-teaching is disabled for this server")
    assert await bot.fetchval("SELECT count(*) FROM server_memories WHERE server_memory_id = $1", quiet) == 1
