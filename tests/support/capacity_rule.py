"""The capacity and eviction rule under the owner lock, in Python: the executable
specification memory_create_batch() follows (docs/design.md, section 5).

The counting and the choice of a victim run where the owner's rows are, inside
memory_create_batch() (db/migrations/007_compact_save.sql), which counts, picks the victim
and names a SaveOutcome in one statement; no product code calls these functions, so they
live with the tests. They say the whole rule plainly enough to read and to test without a
database: tests/unit/test_capacity.py tests the rule itself, and tests/integration/
test_capacity_conformance.py runs one table of cases against both these functions and the
real SQL. Change the rule here first, then in the SQL. What the worker decides before the lock
(whether eviction is permitted, the reserved lineage, the limit reason) is
worker/domain/capacity.py, which the create path calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from worker.domain.capacity import GLOBAL_LINEAGE
from worker.domain.model import CapacityAction, SaveOutcome, Scope, StoredMemory

__all__ = [
    "capacity_action",
    "capacity_outcome",
    "choose_eviction",
    "counts_toward_cap",
    "eviction_order_key",
    "is_eligible",
]


def counts_toward_cap(row_lineage_id: int, *, scope: Scope, lineage_id: int) -> bool:
    """Server memories count per lineage; a user's personal ones per lineage plus the user's
    global rows (lineage 0), which count against every lineage's cap."""
    return row_lineage_id == lineage_id or (scope == "personal" and row_lineage_id == GLOBAL_LINEAGE)


def is_eligible(row: StoredMemory, *, lineage_id: int, now: datetime, decay_days: int) -> bool:
    """Same exact lineage (never 0), written by the model, and unused for `decay_days`."""
    if lineage_id == GLOBAL_LINEAGE or row.lineage_id != lineage_id or row.manually_written:
        return False
    last_used = row.last_reinforced_at or row.created_at
    return last_used < now - timedelta(days=decay_days)


def eviction_order_key(row: StoredMemory) -> tuple[bool, datetime, datetime, int]:
    """`ORDER BY last_reinforced_at NULLS FIRST, created_at, id` as a sort key."""
    reinforced = row.last_reinforced_at
    if reinforced is None:
        return (False, row.created_at, row.created_at, row.memory_id)
    return (True, reinforced, row.created_at, row.memory_id)


def choose_eviction(
    rows: Iterable[StoredMemory], *, lineage_id: int, now: datetime, decay_days: int
) -> StoredMemory | None:
    """The one row a save at the cap may replace, or None when every row is protected."""
    eligible = [
        row for row in rows if is_eligible(row, lineage_id=lineage_id, now=now, decay_days=decay_days)
    ]
    return min(eligible, key=eviction_order_key) if eligible else None


def capacity_action(count: int, cap: int, may_evict: bool, has_candidate: bool) -> CapacityAction:
    """Insert below the cap; at it, replace one dormant row if permitted; above it, refuse.

    Over the cap (the cap was lowered) a save is refused outright: replacing one row would
    keep the owner over the cap, and one save never deletes more than one row.
    """
    if count < cap:
        return "insert"
    if count > cap:
        return "refuse_over_cap"
    return "evict" if may_evict and has_candidate else "refuse_at_cap"


_OUTCOMES: dict[CapacityAction, SaveOutcome] = {
    "insert": SaveOutcome.SAVED, "evict": SaveOutcome.SAVED_WITH_EVICTION,
    "refuse_at_cap": SaveOutcome.AT_CAP, "refuse_over_cap": SaveOutcome.OVER_CAP,
}


def capacity_outcome(action: CapacityAction) -> SaveOutcome:
    """The SaveOutcome the SQL names for a capacity action."""
    return _OUTCOMES[action]
