"""What the create reads of people from the directory, in both database modes, on a real
PostgreSQL: the triggerer's users row (TomoriBot's critical state), the naming layers the
resolver composes names from (global affixes and addressing style, the lineage's nickname and
affixes), and the blacklist flag that picks the notice's footer (docs/design.md, sections 4
and 7.1)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from contracts.codec import RESULT_DECODER
from contracts.kinds.create import INTERNAL_ERROR, SAVED, USER_NOT_FOUND, CommandResult
from db.connection import connect
from db.pool import create_pool
from db.repository import MemoryRepository
from tests import tomoribot
from tests.conftest import unique
from tests.memoryctl import memoryctl
from tests.support.commands import create_fields
from tests.support.directory import add_server, add_user, blacklist, set_persona_nickname
from worker.client.memory_client import new_create
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService

LINEAGE = 7
NAMING = {"prefixes": {"neutral": "Master"}, "suffixes": {"feminine": "-chan", "neutral": "-san"}}


def personal(workspace: str, target: str, members: list[dict], *, lineage: int = LINEAGE, persona_id: int = 1,
             naming: dict | None = NAMING, **extra: Any):
    fields = create_fields(workspace, "{user} likes tea", scope="target_user", target=target, lineage_id=lineage,
                           member_matches=members, **extra)
    fields["persona"] = {"id": persona_id, "lineage_id": lineage, "name": "Tomori", "naming": naming}
    return new_create(**fields)


async def run(pool, cmd) -> CommandResult:
    handled = await CreateMemoryService(MemoryRepository(pool), Limits()).run(cmd)
    return RESULT_DECODER.decode(handled.answer.result)


async def test_standalone_naming_facts_resolve_composed_names_and_pick_the_footer(pool):
    ws, ali, rin = unique(), unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        ali_id = await add_user(conn, ali, nickname="Ali", prefix="Captain", addressing_style="feminine")
        rin_id = await add_user(conn, rin, nickname="Rin")
        await set_persona_nickname(conn, LINEAGE, rin_id, "Sparrow", prefix="Sir", suffix="")
        await set_persona_nickname(conn, LINEAGE + 1, ali_id, "Elsewhere")
        await blacklist(conn, server_id, rin)
    members = [{"id": ali, "display_name": "Alice"}, {"id": rin, "display_name": "Rin"}]

    # Ali's own prefix with the persona's suffix for her addressing style.
    saved = await run(pool, personal(ws, "Captain Ali-chan", members))
    assert (saved.data.status, saved.data.target_user) == (SAVED, "Alice")
    assert saved.notice is not None
    assert saved.notice["embed"]["footer_key"] == "genai.self_teach.personal_memory_footer_manage"
    # Rin's nickname and prefix for this lineage, no suffix; Rin is blacklisted here.
    saved = await run(pool, personal(ws, "Sir Sparrow", members))
    assert (saved.data.status, saved.data.target_user) == (SAVED, "Rin")
    assert saved.notice is not None
    assert saved.notice["embed"]["footer_key"] == "genai.self_teach.personal_memory_footer_user_blacklisted"
    # A persona nickname counts for its own lineage only.
    assert (await run(pool, personal(ws, "Elsewhere", members))).data.status == USER_NOT_FOUND
    assert (await run(pool, personal(ws, "Elsewhere", members, lineage=LINEAGE + 1))).data.status == SAVED


async def test_a_triggerer_without_a_users_row_is_refused_and_saves_nothing(pool):
    ws = unique()
    cmd = new_create(**create_fields(ws, "a fact", triggerer={"id": unique(), "name": "stranger"}))
    result = await run(pool, cmd)
    assert (result.data.status, result.error) == (INTERNAL_ERROR,
                                                  "Internal bot error: Critical state information is missing")
    assert await pool.fetchval("SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
                               " WHERE s.server_disc_id = $1", ws) == 0


def environment(dsn: str) -> dict[str, str]:
    return dict(os.environ, DATABASE_URL=dsn, NATS_URL="nats://127.0.0.1:1", METRICS_PORT="0")


@pytest.fixture
async def adopted(pg_server):
    """A TomoriBot-shaped database, adopted: its pool, what was seeded, its DSN."""
    dsn, world = await tomoribot.seeded_database(pg_server.dsn)
    done = await memoryctl(["adopt"], environment(dsn))
    assert done.returncode == 0, done
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        yield pool, world, dsn
    finally:
        await pool.close()


async def test_adopted_naming_facts_come_from_tomoribots_tables(adopted):
    pool, world, dsn = adopted
    conn = await connect(dsn)
    try:
        # What TomoriBot's naming commands write (the columns of its 062).
        await conn.execute("UPDATE user_personalization_configs c SET prefix_override = 'Dr.', addressing_style ="
                           " 'masculine' FROM users u WHERE u.user_id = c.user_id AND u.user_disc_id = $1", world.mika)
        await conn.execute("UPDATE user_persona_naming_preferences p SET suffix_override = '-kun' FROM users u"
                           " WHERE u.user_id = p.user_id AND u.user_disc_id = $1", world.mika)
        row = await conn.fetchrow(
            "SELECT u.nickname, n.prefix_override, n.addressing_style, p.nickname AS persona, p.suffix_override"
            " FROM directory_users() u JOIN directory_user_naming() n USING (user_id)"
            " JOIN directory_persona_naming() p ON p.user_id = u.user_id AND p.lineage_id = $2"
            " WHERE u.user_disc_id = $1", world.mika, world.lineage)
    finally:
        await conn.close()
    assert dict(row) == {"nickname": "Mika", "prefix_override": "Dr.", "addressing_style": "masculine",
                         "persona": "Kitten", "suffix_override": "-kun"}

    mika = [{"id": world.mika, "display_name": "Mika M", "username": "mika_01"}]
    naming = {"prefixes": {"masculine": "Sir"}}
    # The lineage's persona nickname, then the composed name built on it.
    for target in ("Kitten", "Dr. Kitten-kun"):
        result = await run(pool, personal(world.taught, target, mika, lineage=world.lineage,
                                          persona_id=world.persona_taught, naming=naming))
        assert (result.data.status, result.data.target_user) == (SAVED, "Mika M (@mika_01)"), target
    # A blacklisted person's footer, from TomoriBot's personalization_blacklist.
    banned = [{"id": world.banned, "display_name": "Ban", "username": "ban"}]
    result = await run(pool, personal(world.taught, "Ban", banned, lineage=world.lineage,
                                      persona_id=world.persona_taught, naming=None))
    assert result.data.status == SAVED and result.notice is not None
    assert result.notice["embed"]["footer_key"] == "genai.self_teach.personal_memory_footer_user_blacklisted"


async def test_an_older_tomoribot_database_has_no_naming_layers(pg_server):
    """Before TomoriBot's 062: no affixes, no persona naming; both functions read as empty."""
    dsn, _ = await tomoribot.seeded_database(pg_server.dsn, before_062=True)
    env = environment(dsn)
    dry = await memoryctl(["adopt", "--dry-run"], env)
    assert "none (user_personalization_configs.prefix_override not found)" in dry.stdout, dry.stdout
    assert "none (user_persona_naming_preferences not found)" in dry.stdout
    assert (await memoryctl(["adopt"], env)).returncode == 0
    conn = await connect(dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM directory_user_naming()") == 0
        assert await conn.fetchval("SELECT count(*) FROM directory_persona_naming()") == 0
    finally:
        await conn.close()
