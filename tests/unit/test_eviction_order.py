"""The eviction order has one home, memory_create_batch()'s `ORDER BY o....` line
(db/functions/memory_create_batch.sql): tests/support/capacity_rule.py reads its sort key from
that line, with PostgreSQL's meaning of each term, so changing the line changes the rule the
conformance table and the model-based test hold the SQL to."""

from __future__ import annotations

import pytest

from tests.support.capacity_rule import eviction_order, eviction_order_key
from tests.support.eviction_orders import CHANGED, LIVE, ROWS, ordered, with_order


def test_the_key_is_the_live_line_of_memory_create_batch():
    # What the live order is, case by case, is the conformance table's to say
    # (tests/integration/test_capacity_conformance.py); here, that the key is that line's.
    assert [r.memory_id for r in sorted(ROWS, key=eviction_order_key)] == ordered(LIVE)


@pytest.mark.parametrize(("line", "expected"), CHANGED)
def test_a_changed_order_line_changes_the_key(line, expected):
    assert ordered(line) == expected


@pytest.mark.parametrize("line", [
    "ORDER BY o.created_at, o.rowid",  # no such attribute
    "ORDER BY o.created_at, coalesce(o.last_reinforced_at, o.created_at)",  # not a plain term
    "ORDER BY o.created_at SIDEWAYS",
])
def test_a_term_the_key_cannot_follow_fails_naming_it(line):
    with pytest.raises(ValueError, match="eviction order term"):
        eviction_order(with_order(line))


def test_the_order_line_must_be_there_once():
    with pytest.raises(ValueError, match="exactly one"):
        eviction_order(with_order("LIMIT 2"))
    with pytest.raises(ValueError, match="exactly one"):
        eviction_order(with_order(f"{LIVE}\n{LIVE}"))
