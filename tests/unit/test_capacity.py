"""The capacity and eviction rule of section 5: the part the create path calls before the lock
(worker/domain/capacity.py) and the specification of the part the SQL runs under it
(tests/support/capacity_rule.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.kinds.create import Retrieval
from tests.support.capacity_rule import capacity_action, choose_eviction, is_eligible
from worker.domain.capacity import eviction_blockers
from worker.domain.model import StoredMemory, Workspace

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LINEAGE = 7
DAYS = 30
OLD = NOW - timedelta(days=90)


def row(
    memory_id: int,
    *,
    created: datetime = OLD,
    reinforced: datetime | None = None,
    lineage: int = LINEAGE,
    manual: bool = False,
) -> StoredMemory:
    return StoredMemory(
        memory_id=memory_id,
        lineage_id=lineage,
        manually_written=manual,
        created_at=created,
        last_reinforced_at=reinforced,
        content=f"m{memory_id}",
    )


def eligible(r: StoredMemory, lineage: int = LINEAGE, days: int = DAYS) -> bool:
    return is_eligible(r, lineage_id=lineage, now=NOW, decay_days=days)


def test_dormant_model_row_of_the_lineage_is_eligible() -> None:
    assert eligible(row(1))


def test_manual_rows_are_protected() -> None:
    assert not eligible(row(1, manual=True))


@pytest.mark.parametrize(("row_lineage", "lineage"), [(8, 7), (7, 8), (0, 7)])
def test_other_lineages_are_never_eligible(row_lineage: int, lineage: int) -> None:
    assert not eligible(row(1, lineage=row_lineage), lineage=lineage)


def test_lineage_zero_is_never_eligible() -> None:
    assert not eligible(row(1, lineage=0), lineage=0)


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (timedelta(days=DAYS, microseconds=1), True),
        (timedelta(days=DAYS), False),
        (timedelta(days=DAYS) - timedelta(microseconds=1), False),
        (timedelta(days=1), False),
    ],
)
def test_dormancy_boundary_on_created_at(age: timedelta, expected: bool) -> None:
    assert eligible(row(1, created=NOW - age)) is expected


@pytest.mark.parametrize(
    ("age", "expected"),
    [(timedelta(days=DAYS, seconds=1), True), (timedelta(days=DAYS), False), (timedelta(hours=1), False)],
)
def test_dormancy_uses_last_reinforced_at_when_set(age: timedelta, expected: bool) -> None:
    assert eligible(row(1, created=OLD, reinforced=NOW - age)) is expected


def test_decay_days_is_honoured() -> None:
    r = row(1, created=NOW - timedelta(days=10))
    assert eligible(r, days=7)
    assert not eligible(r, days=14)


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [row(1, manual=True), row(2, manual=True)],
        [row(1, created=NOW - timedelta(days=1)), row(2, reinforced=NOW - timedelta(days=3))],
        [row(1, lineage=8), row(2, lineage=0)],
    ],
)
def test_choose_eviction_none_when_nothing_eligible(rows: list[StoredMemory]) -> None:
    assert choose_eviction(rows, lineage_id=LINEAGE, now=NOW, decay_days=DAYS) is None


def test_choose_eviction_never_for_lineage_zero() -> None:
    assert choose_eviction([row(1, lineage=0)], lineage_id=0, now=NOW, decay_days=DAYS) is None


@pytest.mark.parametrize(
    ("count", "cap", "may_evict", "has_candidate", "expected"),
    [
        (0, 100, False, False, "insert"),
        (99, 100, False, False, "insert"),
        (99, 100, True, True, "insert"),
        (100, 100, True, True, "evict"),
        (100, 100, False, True, "refuse_at_cap"),
        (100, 100, True, False, "refuse_at_cap"),
        (100, 100, False, False, "refuse_at_cap"),
        (101, 100, True, True, "refuse_over_cap"),
        (150, 100, False, False, "refuse_over_cap"),
        (0, 0, True, False, "refuse_at_cap"),
    ],
)
def test_capacity_action(count: int, cap: int, may_evict: bool, has_candidate: bool, expected: str) -> None:
    assert capacity_action(count, cap, may_evict, has_candidate) == expected


READY = Retrieval(rag_available=True, embedding_model="text-embedding-3-small", embedding_credentials=True)
DECAY_ON = Workspace(memory_decay_enabled=True)


def test_eviction_is_permitted_when_every_prerequisite_holds() -> None:
    assert eviction_blockers(DECAY_ON, READY) == ()


@pytest.mark.parametrize(
    ("workspace", "retrieval", "blocker"),
    [
        (Workspace(), READY, "decay_off"),
        (DECAY_ON, Retrieval(embedding_model="m", embedding_credentials=True), "retrieval_unavailable"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="m"), "no_embedding_credentials"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_credentials=True), "no_embedding_model"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="", embedding_credentials=True), "no_embedding_model"),
        (DECAY_ON, Retrieval(rag_available=True, embedding_model="  ", embedding_credentials=True),
         "no_embedding_model"),
    ],
)
def test_eviction_is_blocked_by_what_is_missing(workspace: Workspace, retrieval: Retrieval, blocker: str) -> None:
    assert eviction_blockers(workspace, retrieval) == (blocker,)


def test_every_missing_prerequisite_blocks_eviction_in_order() -> None:
    assert eviction_blockers(Workspace(), Retrieval()) == (
        "decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model")
