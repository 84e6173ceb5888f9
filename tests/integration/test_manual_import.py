"""The `memory.manual` import on real PostgreSQL (docs/design.md, section 8.1), in both database modes:
a standalone database and a TomoriBot-shaped one adopted in place. Each outcome with its effect on
the tables, the inbox and the events; the bot's own rows in the adopted one; and an import racing
creates and panel adds of the same owner, which must leave an outcome a serial order gives, never
an owner above its cap, and one effect per command.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import msgspec
import pytest

from contracts.codec import OP_RESULT_DECODER, RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from contracts.kinds.manual import ADDED, HOST_PROTECTED, IMPORTED, LIMIT_REACHED, MANAGERS_ONLY, ManualMemory
from contracts.op_result import OpResult
from contracts.result_parts import CacheKey
from db.repository import MemoryRepository
from tests.support.commands import manual_command
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.manual.service import ManualMemoryService
from worker.services.base import Handled

from .helpers import event_subjects, personal_save, server_save
from .worlds import MODES, World, world

CAP = 5
LINEAGE = 7
LIMITS = Limits(max_memory_length=100, max_server_memories=CAP, max_personal_memories=CAP)


@pytest.fixture(scope="module")
async def standalone(pg_server, template_db):
    async with world("standalone", pg_server, template_db) as w:
        yield w


@pytest.fixture(scope="module")
async def adopted(pg_server, template_db):
    """A TomoriBot database (tests/tomoribot.py) adopted by `memoryctl adopt`; its seeded rows in `seeded`."""
    async with world("adopted", pg_server, template_db) as w:
        yield w


class Bot(World):
    """A database of either mode (tests/integration/worlds.py) with the services an import races."""

    @classmethod
    def of(cls, w: World) -> Bot:
        bot = cls(w.mode, w.pool, w.seeded)
        bot.manual = ManualMemoryService(MemoryRepository(w.pool), LIMITS)
        bot.creates = CreateMemoryService(MemoryRepository(w.pool), LIMITS)
        return bot

    async def server(self) -> tuple[str, int]:
        """A new workspace and the persona id its server memories name (TomoriBot's is a foreign key)."""
        ws, server_id = await self.workspace()
        return ws, await self.persona(server_id, LINEAGE)

    async def someone(self) -> str:
        """A new person the bot knows: their Discord id."""
        return (await self.user())[0]

    async def run(self, cmd: ManualMemory) -> tuple[OpResult, Handled]:
        handled = await self.manual.run(cmd)
        return OP_RESULT_DECODER.decode(handled.answer.result), handled

    async def rows(self, scope: str, owner: str, lineage: int | None = LINEAGE) -> list[dict]:
        """The owner's rows (of one lineage, or all), by id."""
        if scope == "server":
            sql = ("SELECT m.server_memory_id AS id, m.persona_lineage_id AS lineage, m.content, m.tags, m.source,"
                   " m.manually_written, m.persona_id, u.user_disc_id AS teacher FROM server_memories m"
                   " JOIN servers s USING (server_id) LEFT JOIN users u ON u.user_id = m.user_id"
                   " WHERE s.server_disc_id = $1")
        else:
            sql = ("SELECT m.personal_memory_id AS id, m.persona_lineage_id AS lineage, m.content, m.tags, m.source,"
                   " m.manually_written FROM personal_memories m JOIN users u USING (user_id)"
                   " WHERE u.user_disc_id = $1")
        async with self.pool.acquire() as conn:
            found = [dict(r) for r in await conn.fetch(sql + " ORDER BY 1", owner)]
        return [r for r in found if lineage is None or r["lineage"] == lineage]

    async def subjects(self, command_id: str) -> list[str]:
        async with self.pool.acquire() as conn:
            return await event_subjects(conn, command_id)


@pytest.fixture(params=MODES)
def bot(request) -> Bot:
    return Bot.of(request.getfixturevalue(request.param))


def importing(ws: str, entries: list | None, strategy: str = "merge", *, scope: str = "server",
              actor: str = "300000000000000001", is_manager: bool = True, lineage: int = LINEAGE,
              persona_id: int | None = 1, **fields) -> ManualMemory:
    def as_entry(item):
        return {"content": item[0], "tags": item[1]} if isinstance(item, tuple) else {"content": item}

    return manual_command(ws, actor=actor, is_manager=is_manager, scope=scope, action="import", lineage_id=lineage,
                          persona_id=persona_id, strategy=strategy,
                          entries=None if entries is None else [as_entry(e) for e in entries], **fields)


def panel_add(ws: str, content: str, *, scope: str = "server", actor: str = "300000000000000001",
              lineage: int = LINEAGE, persona_id: int | None = 1) -> ManualMemory:
    return manual_command(ws, actor=actor, scope=scope, lineage_id=lineage, persona_id=persona_id, content=content)


def payloads(handled: Handled) -> list[dict]:
    return [msgspec.json.decode(bytes(row.payload)) for row in handled.events]


def invalidate(scope: str, owner: str) -> str:
    return f"cache.invalidate.{'tomori_state' if scope == 'server' else 'user'}.{owner}"


# --- merge ------------------------------------------------------------------------------------------------


async def test_a_merge_adds_protected_import_rows_for_the_importer_and_skips_duplicates(bot):
    ws, persona = await bot.server()
    importer = await bot.someone()
    first, _ = await bot.run(importing(ws, [("tea is hot", ["drinks"]), "rain"], actor=importer, persona_id=persona))

    result, handled = await bot.run(importing(
        ws, [("  tea   is hot ", ["drinks"]), ("tea is hot", ["other"]), ("snow", "#weather, cold"),
             ("snow", "cold, #weather")], actor=importer, persona_id=persona))

    assert (first.data.status, len(first.data.memory_ids)) == (IMPORTED, 2)
    assert (result.success, result.data.status, result.data.skipped_duplicates, result.data.removed_count) == (
        True, IMPORTED, 2, 0)
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    rows = await bot.rows("server", ws)
    assert [r["id"] for r in rows] == first.data.memory_ids + result.data.memory_ids
    assert [(r["content"], list(r["tags"])) for r in rows] == [
        ("tea is hot", ["drinks"]), ("rain", []), ("tea is hot", ["other"]), ("snow", ["#weather", "cold"])]
    assert {(r["source"], r["manually_written"], r["persona_id"], r["teacher"]) for r in rows} == {
        ("import", True, persona, importer)}
    assert await bot.subjects(result.command_id) == [invalidate("server", ws)] + [f"memory.saved.server.{ws}"] * 2
    saved = payloads(handled)[1:]
    assert [(e["memory_id"], e["content"], e["source"], e["manually_written"], e["lineage_id"]) for e in saved] == [
        (result.data.memory_ids[0], "tea is hot", "import", True, LINEAGE),
        (result.data.memory_ids[1], "snow", "import", True, LINEAGE)]


async def test_a_merge_that_adds_nothing_writes_and_invalidates_nothing(bot):
    ws, persona = await bot.server()
    await bot.run(importing(ws, ["one", "two"], persona_id=persona))

    result, handled = await bot.run(importing(ws, [" one", "two "], persona_id=persona))

    assert (result.success, result.data.status, result.data.memory_ids, result.data.skipped_duplicates) == (
        True, IMPORTED, [], 2)
    assert result.invalidated == [] and handled.events == []
    assert [r["content"] for r in await bot.rows("server", ws)] == ["one", "two"]


# --- replace ----------------------------------------------------------------------------------------------


async def test_a_replace_deletes_the_lineage_then_inserts_publishing_removed_then_saved(bot):
    ws, persona = await bot.server()
    seeded, _ = await bot.run(importing(ws, ["old 1", "old 2", "old 3"], persona_id=persona))
    other, _ = await bot.run(importing(ws, ["another persona's"], lineage=LINEAGE + 1, persona_id=persona))

    result, handled = await bot.run(importing(ws, [("new 1", ["a"]), "new 1"], "replace", persona_id=persona))

    assert (result.data.status, result.data.removed_count, result.data.skipped_duplicates) == (IMPORTED, 3, 0)
    rows = await bot.rows("server", ws)
    assert [(r["id"], r["content"], list(r["tags"])) for r in rows] == [
        (result.data.memory_ids[0], "new 1", ["a"]), (result.data.memory_ids[1], "new 1", [])]
    assert [r["id"] for r in await bot.rows("server", ws, LINEAGE + 1)] == other.data.memory_ids
    assert await bot.subjects(result.command_id) == (
        [invalidate("server", ws)] + [f"memory.removed.server.{ws}"] * 3 + [f"memory.saved.server.{ws}"] * 2)
    removed = payloads(handled)[1:4]
    assert [(e["memory_id"], e["content"], e["lineage_id"]) for e in removed] == [
        (memory_id, f"old {n}", LINEAGE) for n, memory_id in enumerate(seeded.data.memory_ids, start=1)]


async def test_a_replace_with_no_entries_clears_the_lineage(bot):
    ws, persona = await bot.server()
    await bot.run(importing(ws, ["a", "b"], persona_id=persona))

    result, _ = await bot.run(importing(ws, [], "replace", persona_id=persona))

    assert (result.data.status, result.data.removed_count, result.data.memory_ids) == (IMPORTED, 2, [])
    assert result.invalidated == [CacheKey("tomori_state", ws)]
    assert await bot.subjects(result.command_id) == [invalidate("server", ws)] + [f"memory.removed.server.{ws}"] * 2
    assert await bot.rows("server", ws) == []


@pytest.mark.parametrize("strategy", ["merge", "replace"])
async def test_an_import_over_the_cap_changes_nothing(bot, strategy):
    ws, persona = await bot.server()
    await bot.run(importing(ws, ["kept 1", "kept 2"], persona_id=persona))
    before = await bot.rows("server", ws)
    entries = [f"new {n}" for n in range(4 if strategy == "merge" else CAP + 1)]

    result, handled = await bot.run(importing(ws, entries, strategy, persona_id=persona))

    assert (result.success, result.data.status) == (False, LIMIT_REACHED)
    assert (result.data.available, result.data.requested) == ((3, 4) if strategy == "merge" else (CAP, CAP + 1))
    assert handled.events == [] and result.invalidated == []
    assert await bot.rows("server", ws) == before
    async with bot.pool.acquire() as conn:
        assert await conn.fetchval("SELECT status FROM processed_commands WHERE command_id = $1",
                                   result.command_id) == LIMIT_REACHED


async def test_a_personal_replace_keeps_the_global_rows_and_counts_them(bot):
    ws, _ = await bot.server()
    me = await bot.someone()
    personal = {"scope": "personal", "actor": me, "is_manager": False}
    globals_, _ = await bot.run(importing(ws, ["global 1", "global 2"], lineage=0, **personal))
    await bot.run(importing(ws, ["mine 1", "mine 2"], **personal))

    too_many, _ = await bot.run(importing(ws, ["a", "b", "c", "d"], "replace", **personal))
    fits, handled = await bot.run(importing(ws, ["a", "b", "c"], "replace", **personal))
    cleared_globals, _ = await bot.run(importing(ws, ["only global"], "replace", lineage=0, **personal))

    assert (too_many.data.status, too_many.data.available, too_many.data.requested) == (LIMIT_REACHED, 3, 4)
    assert "beside the 2 other memories" in too_many.error
    assert (fits.data.status, fits.data.removed_count, fits.invalidated) == (IMPORTED, 2, [CacheKey("user", me)])
    assert [e.subject for e in handled.events] == (
        [invalidate("personal", me)] + [f"memory.removed.personal.{me}"] * 2 + [f"memory.saved.personal.{me}"] * 3)
    assert (cleared_globals.data.status, cleared_globals.data.removed_count) == (IMPORTED, 2)
    assert [r["content"] for r in await bot.rows("personal", me)] == ["a", "b", "c"]
    assert [(r["id"] in globals_.data.memory_ids, r["content"]) for r in await bot.rows("personal", me, 0)] == [
        (False, "only global")]


# --- who may import ---------------------------------------------------------------------------------------


async def test_a_member_who_is_not_a_manager_may_not_import_server_memories(bot):
    ws, persona = await bot.server()
    await bot.run(importing(ws, ["kept"], persona_id=persona))

    result, handled = await bot.run(importing(ws, ["x"], "replace", is_manager=False, persona_id=persona))

    assert (result.success, result.data.status) == (False, MANAGERS_ONLY)
    assert handled.events == []
    assert [r["content"] for r in await bot.rows("server", ws)] == ["kept"]


async def test_a_host_imports_for_its_identity(bot):
    ws, _ = await bot.server()
    host = await bot.someone()
    identity, _ = await bot.proxy([host])

    result, handled = await bot.run(importing(ws, ["Nova chases storms"], scope="personal", actor=host,
                                              identity_id=identity))

    assert result.data.status == IMPORTED and result.invalidated == [CacheKey("user", identity)]
    assert [r["content"] for r in await bot.rows("personal", identity)] == ["Nova chases storms"]
    assert await bot.rows("personal", host, None) == []
    assert [e.subject for e in handled.events] == [invalidate("personal", identity),
                                                   f"memory.saved.personal.{identity}"]


async def test_the_same_import_twice_has_one_effect(bot):
    ws, persona = await bot.server()
    await bot.run(importing(ws, ["old"], persona_id=persona))
    cmd = importing(ws, ["new 1", "new 2"], "replace", persona_id=persona)

    first, second = await asyncio.gather(bot.manual.run(cmd), bot.manual.run(cmd))

    assert first.answer.result == second.answer.result
    assert [r["content"] for r in await bot.rows("server", ws)] == ["new 1", "new 2"]
    async with bot.pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = $1",
                                   cmd.command_id) == 1


# --- the bot's own rows (adopted) ---------------------------------------------------------------------------


async def test_on_the_bots_rows_merge_skips_legacy_duplicates_at_the_cap_and_replace_removes_them(adopted):
    bot, w = Bot.of(adopted), adopted.seeded
    taught = {"persona_id": w.persona_taught, "lineage": w.lineage, "actor": w.mika}
    legacy = await bot.rows("server", w.taught, w.lineage)
    quiet_before = await bot.rows("server", w.quiet, None)

    # The taught server is at its cap of 5 with pre-worker rows, some with NULL tags.
    dup, dup_events = await bot.run(importing(w.taught, [("Movie night is every  Friday", ["events"]),
                                                         "The server was founded on a rainy Tuesday"], **taught))
    full, _ = await bot.run(importing(w.taught, ["one more"], **taught))
    replaced, handled = await bot.run(importing(w.taught, [("New rules", "rules, #art"), "Kit is a fox"],
                                                "replace", **taught))

    assert (dup.data.status, dup.data.memory_ids, dup.data.skipped_duplicates, dup_events.events) == (
        IMPORTED, [], 2, [])
    assert (full.data.status, full.data.available, full.data.requested) == (LIMIT_REACHED, 0, 1)
    assert (replaced.data.status, replaced.data.removed_count) == (IMPORTED, 5)
    removed = [e for e in payloads(handled) if "content" in e and e["memory_id"] not in replaced.data.memory_ids]
    assert [(e["memory_id"], e["content"]) for e in removed] == [(r["id"], r["content"]) for r in legacy]
    rows = await bot.rows("server", w.taught, w.lineage)
    assert [(r["content"], list(r["tags"]), r["source"], r["manually_written"], r["persona_id"], r["teacher"])
            for r in rows] == [("New rules", ["rules", "#art"], "import", True, w.persona_taught, w.mika),
                               ("Kit is a fox", [], "import", True, w.persona_taught, w.mika)]
    assert await bot.rows("server", w.quiet, None) == quiet_before


async def test_a_protected_hosts_identity_is_refused_an_import_but_may_be_cleared(adopted):
    bot, w = Bot.of(adopted), adopted.seeded
    identity = {"scope": "personal", "actor": w.host, "identity_id": w.proxy, "lineage": 0}

    refused, _ = await bot.run(importing(w.taught, ["Nova"], **identity))
    cleared, _ = await bot.run(importing(w.taught, [], "replace", **identity))

    assert (refused.success, refused.data.status) == (False, HOST_PROTECTED)
    assert (cleared.data.status, cleared.data.removed_count) == (IMPORTED, 0)
    assert await bot.rows("personal", w.proxy, None) == []


# --- racing the same owner ------------------------------------------------------------------------------------


def check_serial(replace: OpResult, removed_ids: set[int], writes: list[tuple[str, object]], final: list[dict],
                 seeded: list[int]) -> None:
    """The outcome of a replace and other writes of one owner must be one a serial order gives."""
    present = {r["id"] for r in final}
    assert len(final) <= CAP, final
    saved_ids = []
    for kind, result in writes:
        if kind == "create":
            if result.data.status in (SAVED, SAVED_WITH_EVICTION):
                saved_ids.append(result.data.memory_id)
            else:
                assert result.data.status == LIMIT_EXCEEDED, result
        elif result.data.status == ADDED:
            saved_ids.append(result.data.memory_id)
        else:
            assert result.data.status == LIMIT_REACHED, result
    if replace.data.status != IMPORTED:
        assert replace.data.status == LIMIT_REACHED and removed_ids == set()
        assert present >= set(seeded) | set(saved_ids)
        return
    assert set(replace.data.memory_ids) <= present
    assert set(seeded) <= removed_ids and not (removed_ids & present)
    for memory_id in saved_ids:  # each write happened once: before the replace (removed by it) or after it
        assert (memory_id in removed_ids) != (memory_id in present), memory_id
    assert removed_ids <= set(seeded) | set(saved_ids)
    assert replace.data.removed_count == len(removed_ids)


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_a_replace_racing_creates_and_adds_of_the_same_owner_leaves_a_serial_outcome(bot, scope):
    outcomes: Counter[str] = Counter()
    for round_ in range(8):
        ws, persona = await bot.server()
        if scope == "server":
            owner, personal = ws, {"persona_id": persona}
            creates = [server_save(ws, f"model fact {n}", lineage=LINEAGE, persona_id=persona) for n in range(3)]
            adds = [panel_add(ws, f"added {n}", persona_id=persona) for n in range(2)]
        else:
            owner = await bot.someone()
            personal = {"scope": "personal", "actor": owner, "is_manager": False}
            await bot.run(importing(ws, ["global fact"], lineage=0, **personal))
            creates = [personal_save(ws, owner, "Mika", f"model fact {n}", lineage=LINEAGE) for n in range(3)]
            # Global rows count against this lineage's cap too.
            adds = [panel_add(ws, f"added {n}", scope="personal", actor=owner, lineage=0) for n in range(2)]
        seeded = (await bot.run(importing(ws, ["old 1", "old 2"], **personal)))[0].data.memory_ids
        replace = importing(ws, ["new 1", "new 2", "new 3"], "replace", **personal)
        jobs = [("replace", replace), ("replace", replace)] + [("create", c) for c in creates] + [
            ("add", a) for a in adds]
        random.Random(round_).shuffle(jobs)

        handled = await asyncio.gather(*(bot.creates.run(cmd) if kind == "create" else bot.manual.run(cmd)
                                         for kind, cmd in jobs))

        answers = [h.answer.result for (kind, _), h in zip(jobs, handled, strict=True) if kind == "replace"]
        assert answers[0] == answers[1]  # one effect, one answer, however often it runs
        replace_result = OP_RESULT_DECODER.decode(answers[0])
        writes = [(kind, (RESULT_DECODER if kind == "create" else OP_RESULT_DECODER).decode(h.answer.result))
                  for (kind, _), h in zip(jobs, handled, strict=True) if kind != "replace"]
        stored = next(h for (kind, _), h in zip(jobs, handled, strict=True) if kind == "replace" and not h.duplicate)
        removed_ids = {e["memory_id"] for e in payloads(stored) if e.get("event_id", "").split(":")[-2] == "removed"}
        # Everything the owner has: the cap counts a personal lineage with the global rows.
        check_serial(replace_result, removed_ids, writes, await bot.rows(scope, owner, None), seeded)
        async with bot.pool.acquire() as conn:
            ids = [cmd.command_id for _, cmd in jobs]
            assert await conn.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = ANY($1::text[])",
                                       ids) == len(set(ids))
        outcomes[replace_result.data.status] += 1
    assert sum(outcomes.values()) == 8
