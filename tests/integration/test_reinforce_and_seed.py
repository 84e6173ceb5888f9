"""memory.reinforce and memory.seed_bio on real PostgreSQL (docs/design.md, sections 8.2 and 8.3)."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from contracts.codec import OP_RESULT_DECODER, RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED_WITH_EVICTION
from contracts.kinds.reinforce import REINFORCED, ReinforceMemories
from contracts.kinds.seed_bio import SEEDED, SKIPPED, SeedBio
from contracts.result_parts import CacheKey
from db.repository import MemoryRepository
from tests.support.commands import TRIGGERER_ID, reinforce_command, seed_bio_command
from tests.support.directory import add_proxy_identity, add_server, add_user, blacklist
from worker.client.memory_client import new_create
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.reinforce.service import ReinforceService
from worker.kinds.seed_bio.service import SeedBioService

from ..conftest import unique
from .helpers import (
    GOOD_RETRIEVAL,
    add_personal_memories,
    add_server_memories,
    event_subjects,
    module_database,
    server_save,
)

LINEAGE = 7
UNKNOWN_ID = 10**12


@pytest.fixture(scope="module")
async def pool(pg_server, template_db):
    async with module_database(pg_server, template_db) as shared:
        yield shared


def reinforce_cmd(workspace: str, refs: list[tuple[str, int]], lineage: int = LINEAGE) -> ReinforceMemories:
    return reinforce_command(workspace, refs, lineage_id=lineage)


async def reinforce(pool, cmd: ReinforceMemories):
    handled = await ReinforceService(MemoryRepository(pool)).run(cmd)
    return OP_RESULT_DECODER.decode(handled.answer.result), handled


async def marks(pool, scope: str, ids: list[int]) -> dict[int, tuple[bool, int]]:
    """(reinforced within the last minute, reinforcement_count) by id."""
    table, key = ("server_memories", "server_memory_id") if scope == "server" else (
        "personal_memories", "personal_memory_id")
    rows = await pool.fetch(
        f"SELECT {key}, coalesce(last_reinforced_at > now() - interval '1 minute', false), reinforcement_count"
        f" FROM {table} WHERE {key} = ANY($1::bigint[])", ids)
    return {r[0]: (r[1], r[2]) for r in rows}


# --- memory.reinforce -------------------------------------------------------------------------


async def test_reinforce_marks_only_server_rows_of_the_lineage_in_this_workspace(pool):
    ws, other_ws = unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        other_id = await add_server(conn, other_ws)
        mine = await add_server_memories(conn, server_id, LINEAGE, [100, 100], reinforced_days_ago=[None, 40])
        await conn.execute("UPDATE server_memories SET reinforcement_count = 3 WHERE server_memory_id = $1", mine[1])
        (other_lineage,) = await add_server_memories(conn, server_id, LINEAGE + 1, [100])
        (elsewhere,) = await add_server_memories(conn, other_id, LINEAGE, [100])
        before = {r[0]: dict(r) for r in await conn.fetch(
            "SELECT * FROM server_memories WHERE server_id IN ($1, $2)", server_id, other_id)}
    cmd = reinforce_cmd(ws, [("server", mine[0]), ("server", mine[1]), ("server", mine[0]),
                             ("server", other_lineage), ("server", elsewhere), ("server", UNKNOWN_ID)])

    result, handled = await reinforce(pool, cmd)

    assert (result.success, result.data.status, result.data.count) == (True, REINFORCED, 2)
    assert result.invalidated == [] and handled.events == []
    assert await marks(pool, "server", [*mine, other_lineage, elsewhere]) == {
        mine[0]: (True, 1), mine[1]: (True, 4), other_lineage: (False, 0), elsewhere: (False, 0)}
    async with pool.acquire() as conn:
        after = {r[0]: dict(r) for r in await conn.fetch(
            "SELECT * FROM server_memories WHERE server_id IN ($1, $2)", server_id, other_id)}
        assert await event_subjects(conn, cmd.command_id) == []
        assert await conn.fetchval("SELECT status FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == REINFORCED
    for memory_id in mine:  # nothing but the two reinforcement columns changes
        changed = {k for k in before[memory_id] if before[memory_id][k] != after[memory_id][k]}
        assert changed == {"last_reinforced_at", "reinforcement_count"}
    assert after[other_lineage] == before[other_lineage] and after[elsewhere] == before[elsewhere]


async def test_reinforce_marks_personal_rows_of_the_lineage_or_lineage_zero_of_any_user(pool):
    ws, me, other = unique(), unique(), unique()
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        my_uid, other_uid = await add_user(conn, me), await add_user(conn, other)
        (p7,) = await add_personal_memories(conn, my_uid, LINEAGE, [10])
        (p0,) = await add_personal_memories(conn, my_uid, 0, [10])
        (p8,) = await add_personal_memories(conn, my_uid, LINEAGE + 1, [10])
        (q7,) = await add_personal_memories(conn, other_uid, LINEAGE, [10])
    cmd = reinforce_cmd(ws, [("personal", p7), ("personal", p0), ("personal", p8), ("personal", q7),
                             ("personal", UNKNOWN_ID)])

    result, handled = await reinforce(pool, cmd)

    assert (result.data.status, result.data.count) == (REINFORCED, 3)
    assert handled.events == []
    assert await marks(pool, "personal", [p7, p0, p8, q7]) == {
        p7: (True, 1), p0: (True, 1), p8: (False, 0), q7: (True, 1)}


async def test_reinforce_of_both_scopes_counts_both_and_a_repeat_changes_nothing(pool):
    ws, me = unique(), unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        (s7,) = await add_server_memories(conn, server_id, LINEAGE, [10])
        (p7,) = await add_personal_memories(conn, await add_user(conn, me), LINEAGE, [10])
    cmd = reinforce_cmd(ws, [("server", s7), ("personal", p7)])

    first, _ = await reinforce(pool, cmd)
    repeat, repeat_handled = await reinforce(pool, cmd)

    assert first.data.count == 2
    assert repeat_handled.duplicate and msgspec.structs.asdict(repeat.data) == msgspec.structs.asdict(first.data)
    assert await marks(pool, "server", [s7]) == {s7: (True, 1)}
    assert await marks(pool, "personal", [p7]) == {p7: (True, 1)}


async def test_an_empty_or_all_unknown_reinforce_counts_zero(pool):
    ws = unique()

    empty, _ = await reinforce(pool, reinforce_cmd(ws, []))
    unknown, _ = await reinforce(pool, reinforce_cmd(ws, [("server", UNKNOWN_ID), ("personal", UNKNOWN_ID)]))

    assert (empty.data.status, empty.data.count) == (REINFORCED, 0)
    assert (unknown.data.status, unknown.data.count) == (REINFORCED, 0)


async def test_a_reinforced_row_is_no_longer_dormant_so_eviction_takes_another(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        old = await add_server_memories(conn, server_id, LINEAGE, [200, 100])
    await reinforce(pool, reinforce_cmd(ws, [("server", old[0])]))

    saved = RESULT_DECODER.decode((await CreateMemoryService(MemoryRepository(pool), Limits(max_server_memories=2))
                                   .run(server_save(ws, "new", retrieval=GOOD_RETRIEVAL))).answer.result)

    assert saved.data.status == SAVED_WITH_EVICTION
    assert saved.data.content_forgotten == "old #1"


# --- memory.seed_bio ----------------------------------------------------------------------------


def seed_cmd(workspace: str, identity: str, bio: str | None, *, new: bool = True) -> SeedBio:
    return seed_bio_command(workspace, identity, bio, new=new)


async def seed(pool, cmd: SeedBio, *, max_units: int = 1000, max_personal: int = 5):
    svc = SeedBioService(MemoryRepository(pool), Limits(max_personal_memories=max_personal), max_units)
    handled = await svc.run(cmd)
    return OP_RESULT_DECODER.decode(handled.answer.result), handled


async def open_identity(pool, *, host_privacy: int = 0) -> tuple[str, str, int]:
    ws, host, proxy = unique(), unique(), f"pk:{uuid.uuid4()}"
    async with pool.acquire() as conn:
        await add_server(conn, ws, decay=True)
        await add_user(conn, host, privacy=host_privacy)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])
    return ws, proxy, proxy_uid


async def identity_state(pool, user_id: int):
    rows = await pool.fetch("SELECT * FROM personal_memories WHERE user_id = $1 ORDER BY personal_memory_id",
                            user_id)
    seeds = await pool.fetch("SELECT memory_id FROM bio_seeds WHERE user_id = $1", user_id)
    return rows, [r[0] for r in seeds]


@pytest.mark.parametrize("host_privacy", [0, 1])
async def test_seed_writes_one_global_bio_memory_with_its_events(pool, host_privacy):
    ws, proxy, proxy_uid = await open_identity(pool, host_privacy=host_privacy)
    cmd = seed_cmd(ws, proxy, "  Nova \n\n chases\tstorms \u00a0 and  rain\r\n")

    result, handled = await seed(pool, cmd)

    assert (result.success, result.data.status) == (True, SEEDED), result
    assert result.invalidated == [CacheKey("user", proxy)]
    rows, seeds = await identity_state(pool, proxy_uid)
    [row] = rows
    assert (row["personal_memory_id"], row["content"]) == (result.data.memory_id, "Nova chases storms and rain")
    assert (row["persona_lineage_id"], row["source"], row["manually_written"]) == (0, "bio_seed", False)
    assert (list(row["tags"]), row["last_reinforced_at"]) == ([], None)
    assert seeds == [row["personal_memory_id"]]
    async with pool.acquire() as conn:
        assert await event_subjects(conn, cmd.command_id) == [
            f"cache.invalidate.user.{proxy}", f"memory.saved.personal.{proxy}"]
    saved = msgspec.json.decode(bytes(handled.events[1].payload))
    assert (saved["owner_id"], saved["lineage_id"], saved["source"], saved["manually_written"]) == (
        proxy, 0, "bio_seed", False)
    assert (saved["memory_id"], saved["content"]) == (row["personal_memory_id"], row["content"])


@pytest.mark.parametrize("bio, max_units, expected", [
    ("abcdefghij", 10, "abcdefghij"),
    ("abcdefghijk", 10, "abcdefghij"),
    ("abcdefghi\U0001F600xyz", 10, "abcdefghi"),  # never half an emoji (2 UTF-16 units)
    ("abcdefgh\U0001F600xyz", 10, "abcdefgh\U0001F600"),
    ("one   two\n\nthree", 8, "one two "),  # collapsed first, then cut; the space kept, as TomoriBot keeps it
])
async def test_seed_collapses_whitespace_and_cuts_at_the_configured_utf16_length(pool, bio, max_units, expected):
    ws, proxy, proxy_uid = await open_identity(pool)

    result, _ = await seed(pool, seed_cmd(ws, proxy, bio), max_units=max_units)

    assert result.data.status == SEEDED
    rows, _ = await identity_state(pool, proxy_uid)
    assert [r["content"] for r in rows] == [expected]


@pytest.mark.parametrize("case", ["blank-bio", "no-bio", "not-new", "host-full-privacy", "host-blacklisted",
                                  "no-host-link", "unknown-identity"])
async def test_seed_skips_and_writes_nothing(pool, case):
    ws, host, proxy = unique(), unique(), f"pk:{uuid.uuid4()}"
    proxy_uid = None
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_user(conn, host, privacy=2 if case == "host-full-privacy" else 0)
        if case == "no-host-link":
            proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=None)
        elif case != "unknown-identity":
            proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])
        if case == "host-blacklisted":
            await blacklist(conn, server_id, host)
    bio = {"blank-bio": " \n\t \u00a0", "no-bio": None}.get(case, "Nova chases storms")
    cmd = seed_cmd(ws, proxy, bio, new=case != "not-new")

    result, handled = await seed(pool, cmd)

    assert (result.success, result.data.status) == (True, SKIPPED), result
    assert result.data.reason
    assert result.invalidated == [] and handled.events == []
    async with pool.acquire() as conn:
        assert await event_subjects(conn, cmd.command_id) == []
        assert await conn.fetchval("SELECT status FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == SKIPPED
        assert await conn.fetchval("SELECT count(*) FROM personal_memories m JOIN users u USING (user_id)"
                                   " WHERE u.user_disc_id = $1", proxy) == 0
    if proxy_uid is not None:
        assert await identity_state(pool, proxy_uid) == ([], [])


async def test_a_second_seed_with_a_new_command_id_is_skipped(pool):
    ws, proxy, proxy_uid = await open_identity(pool)
    first, _ = await seed(pool, seed_cmd(ws, proxy, "first bio"))

    second, handled = await seed(pool, seed_cmd(ws, proxy, "second bio"))

    assert first.data.status == SEEDED
    assert (second.data.status, second.data.reason) == (SKIPPED, "already seeded")
    assert handled.events == []
    rows, seeds = await identity_state(pool, proxy_uid)
    assert [r["content"] for r in rows] == ["first bio"] and seeds == [first.data.memory_id]


async def test_a_repeated_seed_command_answers_its_stored_result(pool):
    ws, proxy, proxy_uid = await open_identity(pool)
    cmd = seed_cmd(ws, proxy, "bio")

    first, _ = await seed(pool, cmd)
    again, handled = await seed(pool, cmd)

    assert handled.duplicate
    assert msgspec.structs.asdict(again.data) == msgspec.structs.asdict(first.data)
    assert again.data.status == SEEDED
    assert len((await identity_state(pool, proxy_uid))[0]) == 1


async def test_a_seed_counts_only_against_lineage_zero(pool):
    ws, proxy, proxy_uid = await open_identity(pool)
    async with pool.acquire() as conn:
        await add_personal_memories(conn, proxy_uid, LINEAGE, [1] * 5)  # a full persona lineage

    result, _ = await seed(pool, seed_cmd(ws, proxy, "bio"), max_personal=5)

    assert result.data.status == SEEDED


async def test_a_seed_with_lineage_zero_full_is_skipped(pool):
    ws, proxy, proxy_uid = await open_identity(pool)
    async with pool.acquire() as conn:
        await add_personal_memories(conn, proxy_uid, 0, [1] * 5)

    result, handled = await seed(pool, seed_cmd(ws, proxy, "bio"), max_personal=5)

    assert result.data.status == SKIPPED and handled.events == []
    rows, seeds = await identity_state(pool, proxy_uid)
    assert len(rows) == 5 and seeds == []


async def test_a_seeded_bio_is_never_evicted_by_model_saves(pool):
    ws, proxy, proxy_uid = await open_identity(pool)
    seeded, _ = await seed(pool, seed_cmd(ws, proxy, "Nova chases storms"))
    async with pool.acquire() as conn:
        # The oldest row of all, never reinforced: eviction would pick it first if it could.
        await conn.execute("UPDATE personal_memories SET created_at = now() - interval '900 days'"
                           " WHERE personal_memory_id = $1", seeded.data.memory_id)
        old = await add_personal_memories(conn, proxy_uid, LINEAGE, [100, 90, 80, 70])
    svc = CreateMemoryService(MemoryRepository(pool), Limits(max_personal_memories=5))
    participants = [{"id": proxy, "kind": "proxy", "label": "Nova", "aliases": ["Nova"]}]

    results = []
    for n in range(5):
        cmd = new_create(workspace_id=ws, persona={"id": 1, "lineage_id": LINEAGE, "name": "Tomori"},
                         bot_user_id="100000000000000001", channel={"id": "200000000000000001"},
                         triggerer={"id": TRIGGERER_ID, "name": "someone"},
                         participants=participants, retrieval=GOOD_RETRIEVAL,
                         tool_args={"memory_content": f"fact {n}", "memory_scope": "target_user",
                                    "target_user": "Nova"})
        results.append(RESULT_DECODER.decode((await svc.run(cmd)).answer.result))

    assert [r.data.status for r in results] == [SAVED_WITH_EVICTION] * 4 + [LIMIT_EXCEEDED]
    assert [r.data.content_forgotten for r in results[:4]] == [f"personal #{i}" for i in range(4)]
    rows, _ = await identity_state(pool, proxy_uid)
    assert {r["personal_memory_id"] for r in rows} & set(old) == set()
    assert [(r["content"], r["persona_lineage_id"]) for r in rows if r["source"] == "bio_seed"] == [
        ("Nova chases storms", 0)]
