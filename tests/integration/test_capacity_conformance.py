"""The capacity and eviction rule under the owner lock, as one table of cases: memory_save_decide()
(db/functions/memory_save_decide.sql) is the rule's one home, and each case runs a create on real
rows and holds it to the table's outcome and victim. The eviction order is that function's one
ORDER BY line; the cases below are what it must choose, so a changed order fails a named case
(the oldest created first fails "never reinforced before reinforced, whatever the age")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from msgspec import UNSET

from contracts.codec import RESULT_DECODER
from db.repository import MemoryRepository
from tests.support.directory import add_server, add_user
from worker.domain.memory import StoredMemory
from worker.domain.scope import Scope
from worker.domain.workspace import Limits
from worker.kinds.create.outcome import SaveOutcome
from worker.kinds.create.record import SavePlan
from worker.kinds.create.service import CreateMemoryService
from worker.services.stored import answer

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, personal_save, server_save

LINEAGE, DECAY_DAYS, CAP = 7, 30, 3


@dataclass(frozen=True)
class Row:
    age_days: float
    lineage: int = LINEAGE
    manual: bool = False
    reinforced_days_ago: float | None = None


@dataclass(frozen=True)
class Case:
    name: str
    rows: tuple[Row, ...]
    outcome: SaveOutcome
    victim: int | None = None  # index into rows
    scope: Scope = "server"
    may_evict: bool = True  # the workspace's decay switch; retrieval is always usable here


OLD, RECENT = 100.0, 5.0
SAVE, EVICT, AT, OVER = SaveOutcome.SAVED, SaveOutcome.SAVED_WITH_EVICTION, SaveOutcome.AT_CAP, SaveOutcome.OVER_CAP
TABLE = [
    Case("below the cap", (Row(OLD), Row(OLD)), SAVE),
    Case("empty owner", (), SAVE),
    Case("below the cap, decay off", (Row(OLD), Row(OLD)), SAVE, may_evict=False),
    Case("at the cap, decay off", (Row(OLD),) * 3, AT, may_evict=False),
    Case("at the cap, every row written by hand", (Row(OLD, manual=True),) * 3, AT),
    Case("at the cap, decay off, nothing eligible either", (Row(OLD, manual=True),) * 3, AT, may_evict=False),
    Case("at the cap, every row used recently", (Row(RECENT),) * 3, AT),
    Case("at the cap, the oldest dormant row goes", (Row(60), Row(OLD), Row(RECENT)), EVICT, victim=1),
    Case("never reinforced before reinforced, whatever the age",
         (Row(200, reinforced_days_ago=90), Row(40), Row(OLD, manual=True)), EVICT, victim=1),
    Case("least recently reinforced first",
         (Row(200, reinforced_days_ago=40), Row(100, reinforced_days_ago=60), Row(RECENT)), EVICT, victim=1),
    Case("a recent reinforcement protects an old row",
         (Row(300, reinforced_days_ago=2), Row(50), Row(RECENT)), EVICT, victim=1),
    Case("ties by age go by id", (Row(OLD), Row(OLD), Row(OLD)), EVICT, victim=0),
    Case("the dormancy cutoff is decay_days", (Row(DECAY_DAYS - 0.1), Row(DECAY_DAYS + 0.1), Row(RECENT)), EVICT,
         victim=1),
    Case("over the cap never replaces", (Row(OLD),) * 4, OVER),
    Case("over the cap, decay off", (Row(OLD),) * 4, OVER, may_evict=False),
    Case("over the cap, nothing eligible", (Row(OLD, manual=True),) * 4, OVER),
    Case("another lineage does not count", (Row(OLD, lineage=8),) * 3 + (Row(OLD),), SAVE),
    Case("another lineage is never the victim", (Row(300, lineage=8), Row(OLD), Row(OLD), Row(OLD)), EVICT, victim=1),
    Case("personal: below the cap", (Row(OLD),), SAVE, scope="personal"),
    Case("personal: global rows count against the cap but never go",
         (Row(300, lineage=0), Row(300, lineage=0), Row(RECENT)), AT, scope="personal"),
    Case("personal: global rows count, the lineage's dormant row goes",
         (Row(300, lineage=0), Row(OLD), Row(60)), EVICT, victim=1, scope="personal"),
    Case("personal: never reinforced first, then least recently reinforced",
         (Row(200, reinforced_days_ago=90), Row(40), Row(300, lineage=0)), EVICT, victim=1, scope="personal"),
    Case("personal: another lineage does not count", (Row(OLD, lineage=8),) * 3, SAVE, scope="personal"),
    Case("personal: over the cap with global rows", (Row(OLD, lineage=0),) * 2 + (Row(OLD),) * 2, OVER,
         scope="personal"),
]


async def _owner_with_rows(conn, case: Case, now: datetime) -> tuple[str, str | None, list[StoredMemory]]:
    ws = unique()
    await add_server(conn, ws, decay=case.may_evict, decay_days=DECAY_DAYS)
    user = unique() if case.scope == "personal" else None
    user_id = await add_user(conn, user) if user else None
    stored = []
    for i, row in enumerate(case.rows):
        created = now - timedelta(days=row.age_days)
        reinforced = None if row.reinforced_days_ago is None else now - timedelta(days=row.reinforced_days_ago)
        if user_id is None:
            memory_id = await conn.fetchval(
                "INSERT INTO server_memories (server_id, persona_lineage_id, content, manually_written, source,"
                " created_at, last_reinforced_at) SELECT server_id, $2, $3, $4, 'legacy', $5, $6"
                " FROM servers WHERE server_disc_id = $1 RETURNING server_memory_id",
                ws, row.lineage, f"row #{i}", row.manual, created, reinforced)
        else:
            memory_id = await conn.fetchval(
                "INSERT INTO personal_memories (user_id, persona_lineage_id, content, manually_written, source,"
                " created_at, last_reinforced_at) VALUES ($1, $2, $3, $4, 'legacy', $5, $6)"
                " RETURNING personal_memory_id", user_id, row.lineage, f"row #{i}", row.manual, created, reinforced)
        stored.append(StoredMemory(memory_id, row.lineage, row.manual, created, reinforced, f"row #{i}"))
    return ws, user, stored


async def sql_answer(pool, case: Case, ws: str, user: str | None) -> tuple[SaveOutcome, int | None, str | None, object]:
    """What memory_create_batch() does: the outcome it chose under the lock and the row it
    forgot (the stored facts), and what the answer rendered from the stored row says it forgot
    and, for a refusal, the count it reports."""
    repo = MemoryRepository(pool)
    service = CreateMemoryService(repo, Limits(max_server_memories=CAP, max_personal_memories=CAP))
    cmd = (server_save(ws, "new", retrieval=GOOD_RETRIEVAL) if user is None
           else personal_save(ws, user, "Mika", "{user} likes tea", retrieval=GOOD_RETRIEVAL))
    handled = await service.run(cmd)
    stored = await repo.stored_command(cmd.command_id, ws)
    assert stored is not None and isinstance(stored.decision, SavePlan) and stored.facts is not None, stored
    assert answer(stored).result == handled.answer.result  # the reply is the stored row's answer
    result = RESULT_DECODER.decode(handled.answer.result)
    return stored.facts.outcome, stored.facts.evicted_id, result.data.content_forgotten, result.data.current_count


async def test_the_sql_answers_every_case_of_the_table(pool):
    for case in TABLE:
        now = datetime.now(UTC)
        async with pool.acquire() as conn:
            ws, user, stored = await _owner_with_rows(conn, case, now)
        victim_id = None if case.victim is None else stored[case.victim].memory_id
        victim_content = None if case.victim is None else stored[case.victim].content

        # A refusal reports the owner's count: every refusing case is at the cap or one over it.
        reported = {AT: CAP, OVER: CAP + 1}.get(case.outcome, UNSET)
        assert await sql_answer(pool, case, ws, user) == (case.outcome, victim_id, victim_content, reported), case.name
