"""The capacity and eviction rule of docs/design.md, section 5: the executable specification the SQL follows.

The counting and the choice of a victim run where the owner's rows are, inside
memory_create_save() under the owner lock (db/migrations/002_save_outcome.sql), which
counts, picks the victim and names a SaveOutcome in one statement; no production code calls
those functions here, on purpose. The decision before the save (worker/domain/create.py)
uses only what needs no rows: whether eviction is permitted and the reserved lineage. These
functions say the whole rule in Python, plainly enough to read and to test without a
database: tests/unit/test_capacity.py tests the rule itself, and tests/integration/
test_capacity_conformance.py runs one table of cases against both these functions and the
real SQL, so the two cannot drift apart. Change the rule here first, then in the SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from contracts.commands import Retrieval
from worker.domain.model import CapacityAction, LimitReason, SaveOutcome, Scope, StoredMemory, Workspace

__all__ = [
    "GLOBAL_LINEAGE",
    "capacity_action",
    "capacity_outcome",
    "counts_toward_cap",
    "choose_eviction",
    "eviction_order_key",
    "eviction_permitted",
    "is_eligible",
    "limit_reason",
]

# Lineage 0 holds a user's global memories (bio seeds among them): never replaced automatically.
GLOBAL_LINEAGE = 0


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


def limit_reason(action: CapacityAction, may_evict: bool) -> LimitReason | None:
    """Why a refusing action refused, for the limit_exceeded text; None for insert and evict."""
    if action == "refuse_over_cap":
        return "over_cap"
    if action == "refuse_at_cap":
        return "nothing_eligible" if may_evict else "eviction_not_permitted"
    return None


def _embedding_model_set(retrieval: Retrieval) -> bool:
    return bool(retrieval.embedding_model and retrieval.embedding_model.strip())


def eviction_permitted(workspace: Workspace, retrieval: Retrieval) -> tuple[bool, str | None]:
    """Whether a save at the cap may replace a row, and if not, why in words for the user.

    Forgetting is only safe when memories are retrieved by relevance: without retrieval the
    model sees every memory, and which ones are "unused" means nothing.
    """
    missing: list[str] = []
    if not workspace.memory_decay_enabled:
        missing.append("memory decay is turned off for this server")
    if not retrieval.rag_available:
        missing.append("memory retrieval is not available")
    if not retrieval.embedding_credentials:
        missing.append("no embedding credentials are configured")
    if not _embedding_model_set(retrieval):
        missing.append("no embedding model is configured")
    if missing:
        return False, "; ".join(missing)
    return True, None
