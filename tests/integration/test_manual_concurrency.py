"""Panels racing the model on real PostgreSQL (issue 3): a manual edit protects a row while model
saves at the cap may evict; concurrent manual adds at the cap; the one-time bio seed under
concurrent duplicates. The owner lock must leave only the outcomes a serial order could give.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter

import pytest

from contracts.codec import OP_RESULT_DECODER, RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED_WITH_EVICTION
from contracts.kinds.manual import ADDED, LIMIT_REACHED, NOT_FOUND, UPDATED, ManualMemory
from contracts.kinds.seed_bio import SEEDED, SKIPPED
from db.repository import MemoryRepository
from tests.support.commands import manual_command, seed_bio_command
from tests.support.directory import add_proxy_identity, add_server, add_user
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.manual.service import ManualMemoryService
from worker.kinds.seed_bio.service import SeedBioService

from ..conftest import unique
from .helpers import (
    GOOD_RETRIEVAL,
    add_personal_memories,
    add_server_memories,
    event_subjects,
    module_database,
    personal_save,
    server_save,
)

CAP = 5
LINEAGE = 7
AGES = [200, 150, 120, 100, 90]  # all dormant (decay 30 days); the first is the first to go


@pytest.fixture(scope="module")
async def pool(pg_server, template_db):
    async with module_database(pg_server, template_db) as shared:
        yield shared


def edit(workspace: str, scope: str, actor: str, memory_id: int, content: str) -> ManualMemory:
    return manual_command(workspace, actor=actor, scope=scope, action="edit", lineage_id=LINEAGE, persona_id=None,
                          memory_id=memory_id, content=content)


class Owner:
    """One owner at the cap with only dormant model rows, and the commands that race on it."""

    def __init__(self, pool, scope: str) -> None:
        self.pool, self.scope = pool, scope
        self.ws, self.user = unique(), unique()
        limits = Limits(max_server_memories=CAP, max_personal_memories=CAP)
        self.creates = CreateMemoryService(MemoryRepository(pool), limits)
        self.manual = ManualMemoryService(MemoryRepository(pool), limits)

    async def setup(self) -> list[int]:
        async with self.pool.acquire() as conn:
            self.server_id = await add_server(conn, self.ws, decay=True, decay_days=30)
            self.user_id = await add_user(conn, self.user)
            if self.scope == "server":
                self.old = await add_server_memories(conn, self.server_id, LINEAGE, AGES)
            else:
                self.old = await add_personal_memories(conn, self.user_id, LINEAGE, AGES)
        self.old_contents = {i: f"{'old' if self.scope == 'server' else 'personal'} #{n}"
                             for n, i in enumerate(self.old)}
        return self.old

    def save(self, n: int):
        if self.scope == "server":
            return server_save(self.ws, f"model fact {n}", retrieval=GOOD_RETRIEVAL)
        return personal_save(self.ws, self.user, "Mika", f"model fact {n}", retrieval=GOOD_RETRIEVAL)

    def edit(self, memory_id: int, content: str) -> ManualMemory:
        return edit(self.ws, self.scope, self.user, memory_id, content)

    async def rows(self) -> dict[int, tuple[str, bool]]:
        async with self.pool.acquire() as conn:
            if self.scope == "server":
                found = await conn.fetch("SELECT server_memory_id, content, manually_written FROM server_memories"
                                         " WHERE server_id = $1", self.server_id)
            else:
                found = await conn.fetch("SELECT personal_memory_id, content, manually_written FROM personal_memories"
                                         " WHERE user_id = $1", self.user_id)
        return {r[0]: (r[1], r[2]) for r in found}

    async def run_create(self, cmd):
        return RESULT_DECODER.decode((await self.creates.run(cmd)).answer.result)

    async def run_manual(self, cmd):
        return OP_RESULT_DECODER.decode((await self.manual.run(cmd)).answer.result)


def check_consistent(owner: Owner, edit_status: str, saves, rows: dict[int, tuple[str, bool]]) -> str:
    """The outcome must be one a serial order gives; returns which one it was."""
    target = owner.old[0]
    assert len(rows) <= CAP, rows
    assert len(rows) == CAP  # every save either replaced one row or was refused
    statuses = Counter(s.data.status for s in saves)
    assert set(statuses) <= {SAVED_WITH_EVICTION, LIMIT_EXCEEDED}, statuses
    forgotten = [s.data.content_forgotten for s in saves if s.data.status == SAVED_WITH_EVICTION]
    gone = [owner.old_contents[i] for i in owner.old if i not in rows]
    assert sorted(forgotten) == sorted(gone)  # every eviction is reported, and nothing else went
    new_ids = {s.data.memory_id for s in saves if s.data.status == SAVED_WITH_EVICTION}
    assert new_ids <= set(rows)
    assert all(rows[i][0].startswith("model fact") and rows[i][1] is False for i in new_ids)
    if edit_status == UPDATED:
        # The edit committed first: the row is protected and no save may take it.
        assert rows[target] == ("protected by hand", True)
        assert owner.old_contents[target] not in forgotten
        assert statuses == Counter({SAVED_WITH_EVICTION: CAP - 1, LIMIT_EXCEEDED: 1})
        refused = next(s for s in saves if s.data.status == LIMIT_EXCEEDED)
        assert refused.data.current_count == CAP
        return "protected"
    # A save evicted the row first: the edit finds nothing and writes nothing.
    assert edit_status == NOT_FOUND, edit_status
    assert target not in rows
    assert forgotten.count(owner.old_contents[target]) == 1
    assert statuses == Counter({SAVED_WITH_EVICTION: CAP})
    return "evicted"


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_a_manual_edit_racing_model_saves_at_the_cap_leaves_a_serial_outcome(pool, scope):
    outcomes = Counter()
    for round_ in range(10):
        owner = Owner(pool, scope)
        old = await owner.setup()
        rng = random.Random(round_)
        jobs = [("edit", owner.edit(old[0], "protected by hand"))] + [("save", owner.save(n)) for n in range(5)]
        rng.shuffle(jobs)

        results = await asyncio.gather(*(owner.run_manual(cmd) if kind == "edit" else owner.run_create(cmd)
                                         for kind, cmd in jobs))

        edit_result = next(r for (kind, _), r in zip(jobs, results, strict=True) if kind == "edit")
        saves = [r for (kind, _), r in zip(jobs, results, strict=True) if kind == "save"]
        outcomes[check_consistent(owner, edit_result.data.status, saves, await owner.rows())] += 1
    assert sum(outcomes.values()) == 10


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_an_edit_committed_first_protects_the_row_from_every_later_save(pool, scope):
    owner = Owner(pool, scope)
    old = await owner.setup()

    edited = await owner.run_manual(owner.edit(old[0], "protected by hand"))
    saves = await asyncio.gather(*(owner.run_create(owner.save(n)) for n in range(5)))

    assert edited.data.status == UPDATED
    assert check_consistent(owner, edited.data.status, saves, await owner.rows()) == "protected"


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_an_edit_after_the_row_was_evicted_is_not_found(pool, scope):
    owner = Owner(pool, scope)
    old = await owner.setup()

    first = await owner.run_create(owner.save(0))
    edited = await owner.run_manual(owner.edit(old[0], "protected by hand"))
    rest = await asyncio.gather(*(owner.run_create(owner.save(n)) for n in range(1, 5)))

    assert first.data.content_forgotten == owner.old_contents[old[0]]
    assert edited.data.status == NOT_FOUND
    assert check_consistent(owner, edited.data.status, [first, *rest], await owner.rows()) == "evicted"
    async with pool.acquire() as conn:
        assert await event_subjects(conn, edited.command_id) == []


async def test_concurrent_manual_adds_stop_exactly_at_the_cap(pool):
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, LINEAGE, [400, 400])  # 3 places left, eviction would be allowed
    svc = ManualMemoryService(MemoryRepository(pool), Limits(max_server_memories=CAP))
    cmds = [manual_command(ws, actor=unique(), lineage_id=LINEAGE, persona_id=None, content=f"fact {n}")
            for n in range(12)]

    results = [OP_RESULT_DECODER.decode(h.answer.result) for h in await asyncio.gather(*(svc.run(c) for c in cmds))]

    assert Counter(r.data.status for r in results) == Counter({ADDED: 3, LIMIT_REACHED: 9})
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT content FROM server_memories WHERE server_id = $1", server_id)
    assert sorted(r[0] for r in rows) == sorted(["old #0", "old #1"] + [
        f"fact {n}" for n, r in enumerate(results) if r.data.status == ADDED])


async def test_twenty_concurrent_seeds_of_one_new_identity_seed_exactly_once(pool):
    ws, host, proxy = unique(), unique(), f"pk:{uuid.uuid4()}"
    async with pool.acquire() as conn:
        await add_server(conn, ws)
        await add_user(conn, host)
        proxy_uid = await add_proxy_identity(conn, proxy, namespace_id=unique("ns-"), hosts=[host])
    svc = SeedBioService(MemoryRepository(pool), Limits(), max_units=1000)
    cmds = [seed_bio_command(ws, proxy, f"Nova, storm chaser (copy {n})") for n in range(20)]

    results = [OP_RESULT_DECODER.decode(h.answer.result) for h in await asyncio.gather(*(svc.run(c) for c in cmds))]

    statuses = Counter(r.data.status for r in results)
    assert statuses == Counter({SEEDED: 1, SKIPPED: 19}), statuses
    seeded = next(r for r in results if r.data.status == SEEDED)
    assert {r.data.reason for r in results if r.data.status == SKIPPED} == {"already seeded"}
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT personal_memory_id, persona_lineage_id, source FROM personal_memories"
                                " WHERE user_id = $1", proxy_uid)
        seeds = await conn.fetch("SELECT memory_id FROM bio_seeds WHERE user_id = $1", proxy_uid)
        events = {c.command_id: await event_subjects(conn, c.command_id) for c in cmds}
    assert [(r[0], r[1], r[2]) for r in rows] == [(seeded.data.memory_id, 0, "bio_seed")]
    assert [r[0] for r in seeds] == [seeded.data.memory_id]
    assert {cid: subjects_ for cid, subjects_ in events.items() if subjects_} == {
        seeded.command_id: [f"cache.invalidate.user.{proxy}", f"memory.saved.personal.{proxy}"]}
