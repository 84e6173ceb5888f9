"""Creates, updates and deletes of one owner racing, on real PostgreSQL in both database modes (issue 37:
an adopted TomoriBot database keeps its invariants). Everything runs at once through the services on one
pool, each update delivered twice at once, so the owner lock and the inbox are what keeps order:

- no cap is exceeded, and the count is what the successes say (start + saved - deleted);
- no update is lost: the edits of a row form one chain, each starting from the text the one before
  it left (two edits that saw the same text would have overwritten each other), and a delete removes
  the chain's last text; nothing succeeds on a row after its delete;
- each command has one effect and one answer: one inbox row, both deliveries answered alike, one
  event of its kind per success.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import asyncpg
import msgspec
import pytest

from contracts.codec import RESULT_DECODER, UPDATE_RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED, CreateMemory
from contracts.kinds.update import MEMORY_DELETED, MEMORY_UPDATED, UpdateMemory
from db.repository import MemoryRepository
from db.requests import UpdateTargetRequest
from tests.support.commands import update_command
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.update.service import UpdateMemoryService

from .helpers import personal_save, server_save
from .worlds import MODES, World, world

CAP = 5
LINEAGE = 4242
START = ["first fact", "second fact", "third fact"]


@pytest.fixture(scope="module", params=MODES)
async def db(request, pg_server, template_db):
    async with world(request.param, pg_server, template_db) as w:
        yield w


class Owner:
    """One owner with three rows, and what may happen to it."""

    def __init__(self, db: World, scope: str) -> None:
        self.db, self.scope = db, scope

    async def setup(self) -> None:
        self.ws, server_id = await self.db.workspace()
        self.persona = await self.db.persona(server_id, LINEAGE)
        self.person, user_id = await self.db.user()
        if self.scope == "server":
            self.rows = [await self.db.server_memory(server_id, LINEAGE, text) for text in START]
        else:
            # A global row counts against the lineage's cap and may be edited and deleted too.
            self.rows = [await self.db.personal_memory(user_id, lineage, text)
                         for lineage, text in zip((LINEAGE, 0, LINEAGE), START, strict=True)]

    def create(self, i: int) -> CreateMemory:
        if self.scope == "server":
            return server_save(self.ws, f"new fact {i}", lineage=LINEAGE, persona_id=self.persona)
        return personal_save(self.ws, self.person, "Mika", f"new fact {i}", lineage=LINEAGE)

    def update(self, memory_id: int, content: str) -> UpdateMemory:
        target = {} if self.scope == "server" else {
            "target": "Mika", "member_matches": [{"id": self.person, "display_name": "Mika"}]}
        return update_command(self.ws, memory_id, content, lineage_id=LINEAGE, **target)

    async def count(self) -> int:
        if self.scope == "server":
            return await self.db.pool.fetchval(
                "SELECT count(*) FROM server_memories m JOIN servers s USING (server_id) WHERE s.server_disc_id = $1",
                self.ws)
        return await self.db.pool.fetchval(
            "SELECT count(*) FROM personal_memories m JOIN users u USING (user_id) WHERE u.user_disc_id = $1",
            self.person)

    async def content(self, memory_id: int) -> str | None:
        table, key = ("server_memories", "server_memory_id") if self.scope == "server" else (
            "personal_memories", "personal_memory_id")
        found: str | None = await self.db.pool.fetchval(f"SELECT content FROM {table} WHERE {key} = $1", memory_id)
        return found


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_creates_updates_and_deletes_of_one_owner_racing_keep_the_invariants(db, scope):
    owner = Owner(db, scope)
    await owner.setup()
    limits = Limits(max_server_memories=CAP, max_personal_memories=CAP)
    repo = MemoryRepository(db.pool)
    creates_service = CreateMemoryService(repo, limits, max_batch=4, runners=2)
    updates_service = UpdateMemoryService(repo, limits)
    creates = [owner.create(i) for i in range(6)]
    updates = [owner.update(memory_id, f"{k} v{j}") for k, memory_id in enumerate(owner.rows) for j in range(4)]
    deletes = [owner.update(owner.rows[0], ""), owner.update(owner.rows[0], " "), owner.update(owner.rows[1], "")]
    # Each update delivered twice at once (a redelivery racing the original).
    work = [creates_service.run(c) for c in creates] + [updates_service.run(u) for u in (updates + deletes) * 2]
    random.Random(37).shuffle(work)
    handled = await asyncio.gather(*work)
    await creates_service.aclose(5)

    answers: dict[str, list[bytes]] = {}
    for h in handled:
        answers.setdefault(msgspec.json.decode(h.answer.result)["command_id"], []).append(h.answer.result)
    created = {c.command_id: RESULT_DECODER.decode(answers[c.command_id][0]) for c in creates}
    changed = {}
    for u in updates + deletes:
        first, second = answers[u.command_id]
        assert first == second, u.command_id  # one answer for both deliveries
        changed[u.command_id] = UPDATE_RESULT_DECODER.decode(first)

    # No cap exceeded, and the count is what the successes say.
    saved = [r for r in created.values() if r.data.status == SAVED]
    refused = [r for r in created.values() if r.data.status != SAVED]
    assert all(r.data.status == LIMIT_EXCEEDED and r.data.current_count == CAP for r in refused), refused
    removed = [r for r in changed.values() if r.data.status == MEMORY_DELETED]
    assert len(removed) == 2  # each of the two rows deleted once; the repeat delete of the first found nothing
    assert await owner.count() == len(START) + len(saved) - len(removed) <= CAP

    # No update lost: per row, the edits chain from the text each found to the text it left.
    for k, memory_id in enumerate(owner.rows):
        ours = [u for u in updates + deletes if u.tool_args["memory_id"] == memory_id]
        stored = {row["command_id"]: msgspec.json.decode(row["facts"]) for row in await db.pool.fetch(
            "SELECT command_id, facts FROM processed_commands WHERE command_id = ANY($1::text[])",
            [u.command_id for u in ours])}
        edits = {facts["content_before"]: changed[cid].data.content_saved for cid, facts in stored.items()
                 if facts and facts["outcome"] == "updated"}
        assert len(edits) == sum(1 for f in stored.values() if f and f["outcome"] == "updated"), "two edits saw one text"
        text, steps = START[k], 0
        while text in edits:
            text, steps = edits[text], steps + 1
        assert steps == len(edits), f"row {k}: the edits do not form one chain: {edits}"
        deleted = [changed[cid].data.content_deleted for cid, f in stored.items() if f and f["outcome"] == "deleted"]
        if deleted:
            assert deleted == [text] and await owner.content(memory_id) is None  # the chain's last text
        else:
            assert await owner.content(memory_id) == text
        assert all(f is None or f["outcome"] != "deleted" or f["content_before"] == text for f in stored.values())

    # One inbox row per command, one event of its kind per success.
    ids = [c.command_id for c in creates + updates + deletes]
    assert await db.pool.fetchval("SELECT count(*) FROM processed_commands WHERE command_id = ANY($1::text[])",
                                  ids) == len(set(ids))
    kinds = Counter()
    for h in handled:
        kinds.update(row.subject.split(".")[1] for row in h.events if row.subject.startswith("memory."))
    successes = {"saved": len(saved), "updated": sum(r.data.status == MEMORY_UPDATED for r in changed.values()),
                 "removed": len(removed)}
    assert {k: v for k, v in kinds.items() if v} == {k: v for k, v in successes.items() if v}


@pytest.mark.parametrize("scope", ["server", "personal"])
async def test_the_memory_an_update_reads_is_row_locked_unless_its_transaction_is_read_only(db, scope):
    """The bot's own writes take no owner lock: the row lock keeps them off the row between the
    read and the write. A dry run's read-only transaction reads the same row without it."""
    ws, server_id = await db.workspace()
    person, user_id = await db.user()
    if scope == "server":
        memory_id, owner, table, key = (await db.server_memory(server_id, LINEAGE, "likes tea"), ws,
                                        "server_memories", "server_memory_id")
    else:
        memory_id, owner, table, key = (await db.personal_memory(user_id, LINEAGE, "likes tea"), person,
                                        "personal_memories", "personal_memory_id")
    request = UpdateTargetRequest(scope=scope, workspace_id=ws, owner_id=owner, user_id=user_id, memory_id=memory_id,
                                  lineage_id=LINEAGE, proxy=False)
    repo = MemoryRepository(db.pool)
    for read_only in (False, True):
        async with repo.owner_transaction([(scope, owner)], read_only=read_only) as tx:
            row = await tx.update_target(request)
            assert row.memory is not None and row.memory.content == "likes tea"
            async with db.pool.acquire() as other:
                locked = f"SELECT 1 FROM {table} WHERE {key} = $1 FOR UPDATE NOWAIT"
                if read_only:
                    assert await other.fetchval(locked, memory_id) == 1
                else:
                    with pytest.raises(asyncpg.LockNotAvailableError):
                        await other.fetchval(locked, memory_id)
