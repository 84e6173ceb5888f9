"""A model-level test of the whole system (issue 4): a hypothesis state machine over the real
services and a real PostgreSQL, checked against a plain in-memory model after every step.

Owners: two workspaces (one with decay on, one off) x two lineages for server memories, and
two users x the same two lineages for personal ones (one user also has a global, lineage-0
row, which counts against both of her lineages). Old legacy and imported rows are put in
first, some of them dormant, some reinforced long ago, some protected, so saves at the cap
evict. Caps are 4. Rules: model saves (server or personal, with or without usable retrieval),
manual add / edit / remove, reinforcement, and the repeat of any earlier command (the same
command object again: the same result, no change).

The model is, per owner and lineage, the rows {id: content, manually_written, reinforcement};
each step's status is predicted from it (a save at the cap evicts when one of the lineage's
rows may go: written by the model and dormant), the row that went must be one of those (which
one is the eviction order's, held by tests/integration/test_capacity_conformance.py's cases),
and after each step the database must hold exactly
the model's rows, every owner within its cap, and one stored result per command.

Each example runs in its own event loop on its own freshly cloned database.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test

from contracts import subjects
from contracts.codec import OP_RESULT_DECODER, RESULT_DECODER
from contracts.kinds.create import LIMIT_EXCEEDED, SAVED, SAVED_WITH_EVICTION
from contracts.kinds.manual import ADDED, EMPTY_CONTENT, LIMIT_REACHED, NOT_FOUND, REMOVED, UNCHANGED, UPDATED, ManualMemory
from contracts.kinds.reinforce import REINFORCED, ReinforceMemories
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import clone_database
from tests.support.commands import manual_command, reinforce_command
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.manual.service import ManualMemoryService
from worker.kinds.reinforce.service import ReinforceService

from .helpers import GOOD_RETRIEVAL, personal_save, server_save

CAP = 4
LIMITS = Limits(max_server_memories=CAP, max_personal_memories=CAP)
LINEAGES = (7, 8)
GLOBAL = 0
DECAY_DAYS = 30
MANAGER = "300000000000000009"
NO_SUCH_ID = 10**12
MACHINE_SETTINGS = settings(max_examples=8, stateful_step_count=50, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

Owner = tuple[str, str]  # ("server", workspace id) or ("personal", user's Discord id)


@dataclass
class Row:
    owner: Owner
    lineage: int
    content: str
    manual: bool
    created_at: datetime
    reinforced_at: datetime | None = None
    reinforcements: int = 0


@dataclass
class Model:
    rows: dict[str, dict[int, Row]] = field(default_factory=lambda: {"server": {}, "personal": {}})

    def of(self, owner: Owner, lineage: int) -> dict[int, Row]:
        return {i: r for i, r in self.rows[owner[0]].items() if r.owner == owner and r.lineage == lineage}

    def count(self, owner: Owner, lineage: int) -> int:
        """What the cap counts: the lineage's rows, plus a user's global rows."""
        n = len(self.of(owner, lineage))
        if owner[0] == "personal" and lineage != GLOBAL:
            n += len(self.of(owner, GLOBAL))
        return n


@dataclass(frozen=True)
class Done:
    """A command that ran, to be delivered again later."""

    kind: str
    cmd: Any
    result: Any
    events: tuple[str, ...]  # the subjects of the events stored with it (nothing publishes them here)
    delivery: int  # the stream sequence it was applied under


def manual_cmd(ws: str, *, scope: str, actor: str, action: str, lineage: int, **fields: Any) -> ManualMemory:
    return manual_command(ws, scope=scope, actor=actor, action=action, lineage_id=lineage, **fields)


def reinforce_cmd(ws: str, lineage: int, refs: list[tuple[str, int]]) -> ReinforceMemories:
    return reinforce_command(ws, refs, lineage_id=lineage)


# Legacy layouts: per owner and lineage, rows of (age in days, reinforced days ago or None, manual).
legacy_row = st.tuples(st.sampled_from([2, 10, 31, 45, 90, 200, 400, 800]),
                       st.sampled_from([None, None, None, 5, 40, 120]),
                       st.sampled_from([False, False, False, True]))
legacy_rows = st.lists(legacy_row, min_size=1, max_size=CAP + 1)


def test_the_system_matches_its_model(pg_server, template_db):
    seen: Counter[str] = Counter()

    class MemorySystem(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.model = Model()
            self.history: list[Done] = []
            self.command_ids: set[str] = set()
            self.last_id = {"server": 0, "personal": 0}
            self.steps = itertools.count()
            self.deliveries = itertools.count(1)  # stand-ins for MEMORY_COMMANDS stream sequences
            self.decay_ws = f"ws-decay-{uuid.uuid4().hex[:8]}"
            self.plain_ws = f"ws-plain-{uuid.uuid4().hex[:8]}"
            self.workspaces = (self.decay_ws, self.plain_ws)
            self.users = {f"1{uuid.uuid4().int % 10**17:017d}": "Alice", f"2{uuid.uuid4().int % 10**17:017d}": "Bob"}
            self.dsn = self.run(clone_database(pg_server, template_db))
            self.pool = self.run(create_pool(self.dsn, min_size=1, max_size=4))
            repo = MemoryRepository(self.pool)
            self.create = CreateMemoryService(repo, LIMITS)
            self.manual = ManualMemoryService(repo, LIMITS)
            self.reinforce_service = ReinforceService(repo)

        def run(self, coro):
            return self.loop.run_until_complete(coro)

        def teardown(self) -> None:
            async def drop() -> None:
                await self.pool.close()
                conn = await asyncpg.connect(pg_server.dsn())
                try:
                    await conn.execute(f'DROP DATABASE IF EXISTS "{self.dsn.rsplit("/", 1)[-1].split("?")[0]}"')
                finally:
                    await conn.close()
            try:
                self.run(drop())
            finally:
                self.loop.close()

        # --- set-up: directory rows and old memories ---------------------------------------

        @initialize(data=st.data())
        def legacy(self, data) -> None:
            now = datetime.now(UTC)
            order = itertools.count()

            async def setup() -> None:
                async with self.pool.acquire() as conn, conn.transaction():
                    server_ids = {}
                    for ws in self.workspaces:
                        server_ids[ws] = await conn.fetchval(
                            "INSERT INTO servers (server_disc_id, memory_decay_enabled, memory_decay_days)"
                            " VALUES ($1, $2, $3) RETURNING server_id", ws, ws == self.decay_ws, DECAY_DAYS)
                    user_ids = {}
                    for disc_id in self.users:
                        user_ids[disc_id] = await conn.fetchval(
                            "INSERT INTO users (user_disc_id) VALUES ($1) RETURNING user_id", disc_id)
                    owners = [(("server", ws), lineage) for ws in self.workspaces for lineage in LINEAGES]
                    owners += [(("personal", u), lineage) for u in self.users for lineage in LINEAGES]
                    first_user = next(iter(self.users))
                    for (scope, owner_id), lineage in owners:
                        layout = data.draw(legacy_rows, label=f"legacy {scope} {owner_id} L{lineage}")
                        if scope == "personal" and owner_id == first_user and lineage == LINEAGES[0]:
                            layout = layout[:CAP - 1]
                        for age, reinforced, manual in layout:
                            # Distinct times, so the eviction order never depends on a tie.
                            created = now - timedelta(days=age, minutes=next(order))
                            reinforced_at = None if reinforced is None else now - timedelta(days=reinforced,
                                                                                          minutes=next(order))
                            content = f"legacy {scope} {owner_id[-4:]} L{lineage} #{next(order)}"
                            if scope == "server":
                                memory_id = await conn.fetchval(
                                    "INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, content,"
                                    " manually_written, source, created_at, updated_at, last_reinforced_at,"
                                    " reinforcement_count) VALUES ($1, 1, $2, $3, $4, 'legacy', $5, $5, $6, $7)"
                                    " RETURNING server_memory_id",
                                    server_ids[owner_id], lineage, content, manual, created, reinforced_at,
                                    0 if reinforced is None else 1)
                            else:
                                memory_id = await conn.fetchval(
                                    "INSERT INTO personal_memories (user_id, persona_lineage_id, content,"
                                    " manually_written, source, created_at, updated_at, last_reinforced_at,"
                                    " reinforcement_count) VALUES ($1, $2, $3, $4, 'import', $5, $5, $6, $7)"
                                    " RETURNING personal_memory_id",
                                    user_ids[owner_id], lineage, content, manual, created, reinforced_at,
                                    0 if reinforced is None else 1)
                            self.model.rows[scope][memory_id] = Row(
                                (scope, owner_id), lineage, content, manual, created, reinforced_at,
                                0 if reinforced is None else 1)
                            self.last_id[scope] = max(self.last_id[scope], memory_id)
                    # One global row: it counts against both lineages of the first user.
                    content = "global fact of the first user"
                    memory_id = await conn.fetchval(
                        "INSERT INTO personal_memories (user_id, persona_lineage_id, content, source, created_at)"
                        " VALUES ($1, 0, $2, 'import', $3) RETURNING personal_memory_id",
                        user_ids[first_user], content, now - timedelta(days=500))
                    self.model.rows["personal"][memory_id] = Row(("personal", first_user), GLOBAL, content, False,
                                                                 now - timedelta(days=500))
                    self.last_id["personal"] = max(self.last_id["personal"], memory_id)

            self.run(setup())
            self.initial_counts = {(o, lin): self.model.count(o, lin) for o in self.all_owners() for lin in LINEAGES}

        def all_owners(self) -> list[Owner]:
            return [("server", ws) for ws in self.workspaces] + [("personal", u) for u in self.users]

        # --- helpers --------------------------------------------------------------------------

        def remember(self, kind: str, cmd: Any, result: Any, handled: Any, delivery: int) -> None:
            seen[f"{kind}: {result.data.status}"] += 1
            assert cmd.command_id not in self.command_ids
            self.command_ids.add(cmd.command_id)
            self.history.append(Done(kind, cmd, result, tuple(m.subject for m in handled.events), delivery))

        def content(self, what: str) -> str:
            return f"{what} {next(self.steps)} {uuid.uuid4().hex[:6]}"

        def new_row(self, scope: str, memory_id: int, row: Row) -> None:
            # Ids come from a sequence used under the lock: always new, always growing.
            assert memory_id not in self.model.rows[scope], memory_id
            assert memory_id > self.last_id[scope], (memory_id, self.last_id[scope])
            self.last_id[scope] = memory_id
            self.model.rows[scope][memory_id] = row

        # --- model saves ----------------------------------------------------------------------

        @rule(data=st.data(), scope=st.sampled_from(["server", "personal"]), lineage=st.sampled_from(LINEAGES),
              usable_retrieval=st.sampled_from([True, True, False]))
        def model_save(self, data, scope, lineage, usable_retrieval) -> None:
            ws = data.draw(st.sampled_from(self.workspaces), label="workspace")
            if scope == "server":
                owner: Owner = ("server", ws)
            else:
                owner = ("personal", data.draw(st.sampled_from(sorted(self.users)), label="user"))
            self.save(ws, owner, lineage, usable_retrieval)

        def full_owners(self) -> list[tuple[Owner, int]]:
            return [(owner, lineage) for owner in self.all_owners() for lineage in LINEAGES
                    if self.model.count(owner, lineage) == CAP and owner != ("server", self.plain_ws)]

        @precondition(lambda self: self.full_owners())
        @rule(data=st.data())
        def model_save_at_the_cap(self, data) -> None:
            """A save where one may be evicted: an owner at its cap, decay on, retrieval usable."""
            owner, lineage = data.draw(st.sampled_from(self.full_owners()), label="full owner")
            self.save(self.decay_ws, owner, lineage, True)

        @staticmethod
        def may_go(row: Row, now: datetime) -> bool:
            """A row a save at the cap may replace: the model's, of a lineage, unused for DECAY_DAYS."""
            last_used = row.reinforced_at or row.created_at
            return row.lineage != GLOBAL and not row.manual and last_used < now - timedelta(days=DECAY_DAYS)

        def save(self, ws: str, owner: Owner, lineage: int, usable_retrieval: bool) -> None:
            scope = owner[0]
            retrieval = GOOD_RETRIEVAL if usable_retrieval else {}
            content = self.content("model fact")
            if scope == "server":
                cmd = server_save(ws, content, lineage=lineage, retrieval=retrieval)
            else:
                user = owner[1]
                cmd = personal_save(ws, user, self.users[user], content, lineage=lineage, retrieval=retrieval)

            delivery = next(self.deliveries)
            handled = self.run(self.create.run(cmd, delivery))
            result = RESULT_DECODER.decode(handled.answer.result)
            self.remember("create", cmd, result, handled, delivery)
            assert not handled.duplicate

            count = self.model.count(owner, lineage)
            may_evict = ws == self.decay_ws and usable_retrieval
            evictable: dict[str, int] = {}
            if count == CAP and may_evict:
                evictable = {r.content: i for i, r in self.model.of(owner, lineage).items()
                             if self.may_go(r, datetime.now(UTC))}
            subjects_ = [m.subject for m in handled.events]
            if count < CAP or evictable:
                expected = SAVED if not evictable else SAVED_WITH_EVICTION
                assert result.data.status == expected, (result, count, evictable)
                assert result.success and result.data.content_saved == content
                if evictable:
                    assert result.data.content_forgotten in evictable, (result, evictable)
                    del self.model.rows[scope][evictable[result.data.content_forgotten]]
                self.new_row(scope, result.data.memory_id, Row(owner, lineage, content, False, datetime.now(UTC)))
                cache = ("tomori_state", ws) if scope == "server" else ("user", owner[1])
                expected_subjects = [subjects.invalidate_subject(*cache), subjects.saved_subject(scope, owner[1])]
                if evictable:
                    expected_subjects += [subjects.evicted_subject(scope, owner[1]), subjects.METRIC_EVICTION_SUBJECT]
                assert subjects_ == expected_subjects, subjects_
            else:
                assert result.data.status == LIMIT_EXCEEDED, (result, count, may_evict)
                assert not result.success and result.error
                assert (result.data.current_count, result.data.max_allowed) == (count, CAP), result
                assert subjects_ == []

        # --- manual add / edit / remove -------------------------------------------------------

        def panel_owner(self, data, scope: str) -> tuple[str, str, Owner]:
            """(workspace, actor, owner) of a panel command."""
            ws = data.draw(st.sampled_from(self.workspaces), label="workspace")
            if scope == "server":
                return ws, MANAGER, ("server", ws)
            user = data.draw(st.sampled_from(sorted(self.users)), label="actor")
            return ws, user, ("personal", user)

        def run_manual(self, cmd: ManualMemory) -> Any:
            delivery = next(self.deliveries)
            handled = self.run(self.manual.run(cmd, delivery))
            result = OP_RESULT_DECODER.decode(handled.answer.result)
            self.remember("manual", cmd, result, handled, delivery)
            assert not handled.duplicate
            return result, [m.subject for m in handled.events]

        @rule(data=st.data(), scope=st.sampled_from(["server", "personal"]), lineage=st.sampled_from(LINEAGES),
              blank=st.sampled_from([False] * 9 + [True]))
        def manual_add(self, data, scope, lineage, blank) -> None:
            ws, actor, owner = self.panel_owner(data, scope)
            content = "   " if blank else self.content("hand-written fact")
            cmd = manual_cmd(ws, scope=scope, actor=actor, action="add", lineage=lineage, content=f"  {content} ")
            count = self.model.count(owner, lineage)
            result, subjects_ = self.run_manual(cmd)
            if blank:
                assert result.data.status == EMPTY_CONTENT, result
            elif count >= CAP:
                assert result.data.status == LIMIT_REACHED, (result, count)  # adds never evict
            else:
                assert result.data.status == ADDED, (result, count)
                assert result.data.memory_ids == [result.data.memory_id]
                self.new_row(scope, result.data.memory_id, Row(owner, lineage, content, True, datetime.now(UTC)))
                assert subjects_[1:] == [subjects.saved_subject(scope, owner[1])], subjects_
                return
            assert not result.success and result.error
            assert subjects_ == []

        def pick_target(self, data, owner: Owner, lineage: int) -> int:
            """Mostly a row of this owner and lineage; else another owner's or lineage's, or none."""
            mine = sorted(self.model.of(owner, lineage))
            others = sorted(i for i, r in self.model.rows[owner[0]].items() if (r.owner, r.lineage) != (owner, lineage))
            where = data.draw(st.sampled_from(["mine"] * 8 + ["others", "none"]), label="target kind")
            if where == "mine" and mine:
                return data.draw(st.sampled_from(mine), label="memory_id")
            if where == "others" and others:
                return data.draw(st.sampled_from(others), label="memory_id")
            return NO_SUCH_ID

        @rule(data=st.data(), scope=st.sampled_from(["server", "personal"]), lineage=st.sampled_from(LINEAGES),
              how=st.sampled_from(["new", "new", "same", "same", "blank"]))
        def manual_edit(self, data, scope, lineage, how) -> None:
            ws, actor, owner = self.panel_owner(data, scope)
            memory_id = self.pick_target(data, owner, lineage)
            row = self.model.of(owner, lineage).get(memory_id)
            content = {"new": self.content("edited fact"), "same": row.content if row else "same",
                       "blank": " "}[how]
            cmd = manual_cmd(ws, scope=scope, actor=actor, action="edit", lineage=lineage, memory_id=memory_id,
                             content=content)
            result, subjects_ = self.run_manual(cmd)
            if row is None:
                assert result.data.status == NOT_FOUND, result
                assert subjects_ == []
            elif how == "blank":
                assert result.data.status == EMPTY_CONTENT, result
                assert subjects_ == []
            elif content == row.content and row.manual:
                assert result.data.status == UNCHANGED, result
                assert subjects_ == []
            else:
                # Also a re-save of an unprotected row: it is now protected from eviction.
                assert result.data.status == UPDATED, (result, row)
                assert result.data.memory_id == memory_id
                self.model.rows[scope][memory_id] = replace(row, content=content, manual=True)
                assert subjects_[1:] == [subjects.saved_subject(scope, owner[1])], subjects_

        @rule(data=st.data(), scope=st.sampled_from(["server", "personal"]), lineage=st.sampled_from(LINEAGES))
        def manual_remove(self, data, scope, lineage) -> None:
            ws, actor, owner = self.panel_owner(data, scope)
            memory_id = self.pick_target(data, owner, lineage)
            row = self.model.of(owner, lineage).get(memory_id)
            cmd = manual_cmd(ws, scope=scope, actor=actor, action="remove", lineage=lineage, memory_id=memory_id)
            result, subjects_ = self.run_manual(cmd)
            if row is None:
                assert result.data.status == NOT_FOUND, result
                assert subjects_ == []
            else:
                assert result.data.status == REMOVED and result.data.memory_id == memory_id, result
                del self.model.rows[scope][memory_id]
                assert subjects_[1:] == [subjects.removed_subject(scope, owner[1])], subjects_

        # --- reinforcement --------------------------------------------------------------------

        @rule(data=st.data(), lineage=st.sampled_from(LINEAGES))
        def reinforce(self, data, lineage) -> None:
            ws = data.draw(st.sampled_from(self.workspaces), label="workspace")
            candidates = ([("server", i) for i in self.model.rows["server"]]
                          + [("personal", i) for i in self.model.rows["personal"]]
                          + [("server", NO_SUCH_ID), ("personal", NO_SUCH_ID)])
            refs = data.draw(st.lists(st.sampled_from(sorted(candidates)), max_size=6), label="memories")
            cmd = reinforce_cmd(ws, lineage, refs)
            delivery = next(self.deliveries)
            handled = self.run(self.reinforce_service.run(cmd, delivery))
            result = OP_RESULT_DECODER.decode(handled.answer.result)
            self.remember("reinforce", cmd, result, handled, delivery)
            # Server rows of this workspace and exact lineage; personal rows of any user, of this
            # lineage or global. Anything else is ignored.
            hit = set()
            for scope, memory_id in set(refs):
                row = self.model.rows[scope].get(memory_id)
                if row is None:
                    continue
                if scope == "server" and row.owner == ("server", ws) and row.lineage == lineage:
                    hit.add((scope, memory_id))
                if scope == "personal" and row.lineage in (lineage, GLOBAL):
                    hit.add((scope, memory_id))
            assert result.success and result.data.status == REINFORCED, result
            assert result.data.count == len(hit), (result, hit, refs)
            assert handled.events == [] and result.invalidated == []
            now = datetime.now(UTC)
            for scope, memory_id in hit:
                row = self.model.rows[scope][memory_id]
                self.model.rows[scope][memory_id] = replace(row, reinforced_at=now,
                                                            reinforcements=row.reinforcements + 1)

        # --- the same command delivered again -------------------------------------------------

        @precondition(lambda self: self.history)
        @rule(data=st.data())
        def deliver_again(self, data) -> None:
            done = data.draw(st.sampled_from(self.history), label="repeat of")
            service = {"create": self.create, "manual": self.manual, "reinforce": self.reinforce_service}[done.kind]
            # A redelivery of the message that applied it, or another message with its command id.
            same = data.draw(st.booleans(), label="the same message")
            handled = self.run(service.run(done.cmd, done.delivery if same else next(self.deliveries)))
            decoder = RESULT_DECODER if done.kind == "create" else OP_RESULT_DECODER
            assert handled.duplicate
            assert decoder.decode(handled.answer.result) == done.result
            # The same message hands back the events stored with the command (for the handler to
            # publish again), another message none; neither writes any.
            assert tuple(m.subject for m in handled.events) == (done.events if same else ())
            seen[f"repeat of {done.kind}"] += 1

        # --- after every step: the database is the model --------------------------------------

        @invariant()
        def database_matches_the_model(self) -> None:
            async def read():
                async with self.pool.acquire() as conn:
                    server = await conn.fetch(
                        "SELECT m.server_memory_id AS id, s.server_disc_id AS owner, m.persona_lineage_id AS lineage,"
                        " m.content, m.manually_written, m.reinforcement_count,"
                        " m.last_reinforced_at IS NOT NULL AS reinforced"
                        " FROM server_memories m JOIN servers s USING (server_id)")
                    personal = await conn.fetch(
                        "SELECT m.personal_memory_id AS id, u.user_disc_id AS owner, m.persona_lineage_id AS lineage,"
                        " m.content, m.manually_written, m.reinforcement_count,"
                        " m.last_reinforced_at IS NOT NULL AS reinforced"
                        " FROM personal_memories m JOIN users u USING (user_id)")
                    stored = await conn.fetchval("SELECT count(*) FROM processed_commands")
                return server, personal, stored

            server, personal, stored = self.run(read())
            for scope, rows in (("server", server), ("personal", personal)):
                actual = {r["id"]: (r["owner"], r["lineage"], r["content"], r["manually_written"],
                                    r["reinforced"], r["reinforcement_count"]) for r in rows}
                expected = {i: (m.owner[1], m.lineage, m.content, m.manual, m.reinforced_at is not None,
                                m.reinforcements) for i, m in self.model.rows[scope].items()}
                if actual != expected:
                    diff = {i: (actual.get(i), expected.get(i)) for i in actual.keys() | expected.keys()
                            if actual.get(i) != expected.get(i)}
                    raise AssertionError(f"{scope} rows differ from the model (database, model): {diff}")
            # No owner ever grows past its cap (one already over it, from before, never grows).
            for owner in self.all_owners():
                for lineage in LINEAGES:
                    count = self.model.count(owner, lineage)
                    assert count <= max(CAP, self.initial_counts[(owner, lineage)]), (owner, lineage, count)
            # Exactly one stored result per command, repeats included.
            assert stored == len(self.command_ids), (stored, len(self.command_ids))

    run_state_machine_as_test(MemorySystem, settings=MACHINE_SETTINGS)
    print(sorted(seen.items()))
