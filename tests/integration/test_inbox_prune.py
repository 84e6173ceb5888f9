"""The inbox prune (worker/consuming/administration/inbox_prune.py) on a real database: everything past its
retention goes, however many batches that takes; nothing younger does."""

from __future__ import annotations

from db.repository import MemoryRepository
from tests.conftest import unique
from worker.consuming.administration.inbox_prune import prune_due


async def _inbox_rows(pool, prefix: str, count: int, age_days: float) -> None:
    """Rows of both shapes: a create's (its decision) and every other kind's (its result)."""
    await pool.execute(
        "INSERT INTO processed_commands (command_id, kind, workspace_id, status, result, decision, processed_at)"
        " SELECT $1 || g, CASE WHEN g % 2 = 0 THEN 'create' ELSE 'manual' END, 'ws',"
        "        CASE WHEN g % 2 = 1 THEN 'ok' END, CASE WHEN g % 2 = 1 THEN '{}'::json END,"
        "        CASE WHEN g % 2 = 0 THEN '{\"decided\": \"invalid_args\", \"detail\": \"x\"}'::jsonb END,"
        "        now() - make_interval(days => $3)"
        " FROM generate_series(1, $2) g", prefix, count, age_days)


async def test_every_row_past_the_retention_goes_in_one_prune_however_many_batches(pool):
    prefix = unique("prune-")
    await _inbox_rows(pool, f"{prefix}old-", 23, age_days=40)
    await _inbox_rows(pool, f"{prefix}young-", 4, age_days=20)

    removed = await prune_due(MemoryRepository(pool), inbox_days=35, batch=5)

    assert removed >= 23  # and whatever else of the shared database was that old
    left = await pool.fetch("SELECT command_id FROM processed_commands WHERE starts_with(command_id, $1)", prefix)
    assert sorted(r[0] for r in left) == sorted(f"{prefix}young-{i}" for i in range(1, 5))


async def test_a_prune_with_nothing_due_removes_nothing(pool):
    prefix = unique("prune-")
    await _inbox_rows(pool, prefix, 3, age_days=1)
    await prune_due(MemoryRepository(pool), inbox_days=35, batch=5)

    assert await prune_due(MemoryRepository(pool), inbox_days=35, batch=5) == 0
    assert await pool.fetchval("SELECT count(*) FROM processed_commands WHERE starts_with(command_id, $1)",
                               prefix) == 3


async def test_shadow_pairs_past_the_retention_go_with_the_inbox(pool):
    prefix = unique("shadow-prune-")
    await pool.execute(
        "INSERT INTO shadow_pairs (command_id, tenant, kind, workspace_id, outcome, created_at)"
        " SELECT $1 || g, '', 'create', 'ws', 'agreed', now() - make_interval(days => CASE WHEN g <= 7 THEN 40 ELSE 1 END)"
        " FROM generate_series(1, 9) g", prefix)

    await prune_due(MemoryRepository(pool), inbox_days=35, batch=3)

    left = await pool.fetch("SELECT command_id FROM shadow_pairs WHERE starts_with(command_id, $1)", prefix)
    assert sorted(r[0] for r in left) == [f"{prefix}8", f"{prefix}9"]
