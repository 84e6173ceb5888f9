"""Eviction orders to hold the rule to: the live `ORDER BY` line of memory_create_batch()
(db/functions/memory_create_batch.sql), other lines a maintainer might write, a few rows, and
the order each line puts them in. tests/unit/test_eviction_order.py holds the Python key to
this table, tests/integration/test_capacity_conformance.py holds PostgreSQL to it."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from db import functions
from tests.support.capacity_rule import eviction_order, eviction_order_terms, order_key
from worker.domain.model import StoredMemory

NOW = datetime(2025, 6, 1, tzinfo=UTC)
# The live line, as memory_create_batch() has it: read, never copied, so changing it there is
# the one edit the order needs.
LIVE = f"ORDER BY {eviction_order_terms(functions.source('memory_create_batch'))}"


def row(memory_id: int, created_days: float, reinforced_days: float | None = None) -> StoredMemory:
    return StoredMemory(memory_id, 7, False, NOW - timedelta(days=created_days),
                        None if reinforced_days is None else NOW - timedelta(days=reinforced_days))


ROWS = [row(1, 10), row(2, 90), row(3, 300, reinforced_days=40), row(4, 200, reinforced_days=60), row(5, 90)]


def with_order(line: str) -> str:
    """memory_create_batch's text with its eviction order line replaced by `line`."""
    source = functions.source("memory_create_batch")
    assert source.count(LIVE) == 1
    return source.replace(LIVE, line)


def ordered(line: str) -> list[int]:
    shuffled = list(ROWS)
    random.Random(7).shuffle(shuffled)
    return [r.memory_id for r in sorted(shuffled, key=order_key(eviction_order(with_order(line))))]


# Other orders a maintainer might write, and the order each puts ROWS in
# (tests/integration/test_capacity_conformance.py has PostgreSQL order ROWS by each of them).
CHANGED = [
    # Oldest first, whether reinforced or not.
    ("ORDER BY o.created_at, o.id", [3, 4, 2, 5, 1]),
    # Newest first; ties by id, highest first.
    ("ORDER BY o.created_at DESC, o.id DESC", [1, 5, 2, 4, 3]),
    # ASC puts NULLs last: the reinforced rows first.
    ("ORDER BY o.last_reinforced_at, o.id", [4, 3, 1, 2, 5]),
    # NULLS FIRST says otherwise.
    ("ORDER BY o.last_reinforced_at NULLS FIRST, o.id", [1, 2, 5, 4, 3]),
    # DESC puts NULLs first, and the most recently reinforced next.
    ("ORDER BY o.last_reinforced_at DESC, o.created_at, o.id", [2, 5, 1, 3, 4]),
    ("ORDER BY o.last_reinforced_at DESC NULLS LAST, o.id", [3, 4, 1, 2, 5]),
    # A boolean term: false before true (IS NULL is false for the reinforced rows).
    ("ORDER BY o.last_reinforced_at IS NULL, o.id", [3, 4, 1, 2, 5]),
    ("ORDER BY o.last_reinforced_at IS NULL DESC, o.created_at DESC, o.id", [1, 2, 5, 4, 3]),
]
