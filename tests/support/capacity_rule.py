"""The capacity and eviction rule under the owner lock, in Python: the executable
specification memory_create_batch() follows (docs/design.md, section 5).

The counting and the choice of a victim run where the owner's rows are, inside
memory_create_batch() (db/functions/memory_create_batch.sql), which counts, picks the victim
and names a SaveOutcome in one statement; no product code calls these functions, so they
live with the tests. They say the whole rule plainly enough to read and to test without a
database: tests/unit/test_capacity.py tests the rule itself, and tests/integration/
test_capacity_conformance.py runs one table of cases against both these functions and the
real SQL. Change the rule here first, then in the SQL. The eviction order is the exception:
it is written once, as that function's `ORDER BY o.` line, which eviction_order_key reads
and follows (tests/unit/test_eviction_order.py), so changing the order is changing that line.
What the worker decides before the lock (whether eviction is permitted, the reserved
lineage, the limit reason) is worker/domain/capacity.py, which the create path calls.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from db import functions
from worker.domain.capacity import GLOBAL_LINEAGE
from worker.domain.model import CapacityAction, SaveOutcome, Scope, StoredMemory

__all__ = [
    "capacity_action",
    "capacity_outcome",
    "choose_eviction",
    "counts_toward_cap",
    "eviction_order",
    "eviction_order_key",
    "eviction_order_terms",
    "is_eligible",
    "order_key",
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


# The line of memory_create_batch() that orders an owner's evictable rows (`owned o`).
_ORDER_LINE = re.compile(r"^\s*ORDER BY (?P<terms>o\..*?)\s*$", re.MULTILINE)
# One term: o.<column>[ IS [NOT] NULL][ ASC|DESC][ NULLS FIRST|LAST].
_TERM = re.compile(r"o\.(?P<column>[a-z_]+)(?P<null_test> IS (?P<not>NOT )?NULL)?"
                   r"(?: (?P<direction>ASC|DESC))?(?: NULLS (?P<nulls>FIRST|LAST))?", re.IGNORECASE)
# `owned`'s columns by StoredMemory's names: its id is the table's id column.
_ATTRIBUTES = {"id": "memory_id"}


@dataclasses.dataclass(frozen=True)
class OrderTerm:
    """One term of an ORDER BY, with PostgreSQL's meaning: ASC unless DESC; NULLs sort as larger
    than every value (last ascending, first descending) unless NULLS says otherwise; a
    `column IS [NOT] NULL` term is a boolean (false before true), never NULL."""

    attribute: str  # StoredMemory's
    null_test: bool | None  # None: the value itself; True: `IS NULL`; False: `IS NOT NULL`
    descending: bool
    nulls_first: bool


def eviction_order_terms(sql: str) -> str:
    """The terms of the one `ORDER BY o.` line of a function's text (as written after ORDER BY)."""
    found = _ORDER_LINE.findall(sql)
    if len(found) != 1:
        raise ValueError(f"expected exactly one 'ORDER BY o.' line in memory_create_batch, found {len(found)}")
    return str(found[0])


def eviction_order(sql: str | None = None) -> tuple[OrderTerm, ...]:
    """The eviction order of memory_create_batch()'s text (`sql`; by default its file)."""
    text = functions.source("memory_create_batch") if sql is None else sql
    fields = {f.name for f in dataclasses.fields(StoredMemory)}
    terms = []
    for written in eviction_order_terms(text).split(","):
        match = _TERM.fullmatch(written.strip())
        if match is None:
            raise ValueError(f"eviction order term {written.strip()!r} is not o.<column>[ IS [NOT] NULL]"
                             "[ ASC|DESC][ NULLS FIRST|LAST]")
        attribute = _ATTRIBUTES.get(match["column"], match["column"])
        if attribute not in fields:
            raise ValueError(f"eviction order term {written.strip()!r}: StoredMemory has no {attribute!r}")
        descending = (match["direction"] or "ASC").upper() == "DESC"
        nulls_first = match["nulls"].upper() == "FIRST" if match["nulls"] else descending
        null_test = None if match["null_test"] is None else match["not"] is None
        terms.append(OrderTerm(attribute, null_test, descending, nulls_first))
    return tuple(terms)


@functools.total_ordering
class _Ordered:
    """One term's value of one row, compared as the term orders it."""

    __slots__ = ("term", "value")

    def __init__(self, term: OrderTerm, value: Any) -> None:
        self.term, self.value = term, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ordered) and self.value == other.value

    def __lt__(self, other: _Ordered) -> bool:
        mine, theirs = self.value, other.value
        if mine is None or theirs is None:
            first, last = (mine, theirs) if self.term.nulls_first else (theirs, mine)
            return first is None and last is not None
        return bool(theirs < mine) if self.term.descending else bool(mine < theirs)


def order_key(terms: tuple[OrderTerm, ...]) -> Callable[[StoredMemory], tuple[_Ordered, ...]]:
    """A sort key ordering rows as `ORDER BY terms` does."""
    def key(row: StoredMemory) -> tuple[_Ordered, ...]:
        values = []
        for term in terms:
            value = getattr(row, term.attribute)
            if term.null_test is not None:
                value = (value is None) == term.null_test
            values.append(_Ordered(term, value))
        return tuple(values)

    return key


@functools.cache
def _eviction_key() -> Callable[[StoredMemory], tuple[_Ordered, ...]]:
    return order_key(eviction_order())


def eviction_order_key(row: StoredMemory) -> tuple[_Ordered, ...]:
    """memory_create_batch()'s eviction order, as a sort key."""
    return _eviction_key()(row)


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
