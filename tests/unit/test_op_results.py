"""Results of memory.manual, memory.reinforce and memory.seed_bio, as they go on the wire."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.manual import (
    ALL_DUPLICATES,
    BATCH_LIMIT_REACHED,
    BLACKLISTED,
    CONTENT_TOO_LONG,
    EMPTY_CONTENT,
    HOST_PROTECTED,
    LIMIT_REACHED,
    MANAGERS_ONLY,
    NOT_FOUND,
    PRIVACY_BLOCKED,
    REMOVED,
    TEACHING_DISABLED,
    UNCHANGED,
    UPDATED,
)
from contracts.kinds.reinforce import REINFORCED
from contracts.kinds.seed_bio import SEEDED, SKIPPED
from contracts.op_result import OpResult
from contracts.result_parts import FAILED, CacheKey
from worker.domain.op_result import failed
from worker.kinds.manual.decided import Refuse
from worker.kinds.manual.rendering import added, imported, refused, removed, unchanged, updated
from worker.kinds.reinforce.rendering import reinforced
from worker.kinds.seed_bio.rendering import seeded, skipped

KEYS = [CacheKey("tomori_state", "500"), CacheKey("user", "100")]


def wire(result: OpResult) -> dict[str, Any]:
    """The JSON a bot reads: unset fields are absent."""
    decoded = msgspec.json.decode(msgspec.json.encode(result))
    assert isinstance(decoded, dict)
    return decoded


def test_refused_carries_the_reason_twice() -> None:
    result = refused("m-1", Refuse(EMPTY_CONTENT, "The memory is empty."))
    assert wire(result) == {
        "command_id": "m-1",
        "success": False,
        "error": "The memory is empty.",
        "data": {"status": EMPTY_CONTENT, "reason": "The memory is empty."},
        "invalidated": [],
    }


def test_refused_batch_carries_available_and_requested() -> None:
    refuse = Refuse(BATCH_LIMIT_REACHED, "Too many.", {"available": 2, "requested": 7})
    data = wire(refused("m-1", refuse))["data"]
    assert data == {"status": BATCH_LIMIT_REACHED, "reason": "Too many.", "available": 2, "requested": 7}


def test_refused_with_zero_available_still_says_so() -> None:
    refuse = Refuse(BATCH_LIMIT_REACHED, "Full.", {"available": 0, "requested": 1})
    assert wire(refused("m-1", refuse))["data"]["available"] == 0


@pytest.mark.parametrize(
    "status",
    [
        PRIVACY_BLOCKED, HOST_PROTECTED, EMPTY_CONTENT, CONTENT_TOO_LONG,
        LIMIT_REACHED, BATCH_LIMIT_REACHED, ALL_DUPLICATES, NOT_FOUND,
        BLACKLISTED, TEACHING_DISABLED, MANAGERS_ONLY,
    ],
)
def test_every_refusal_status_passes_through(status: str) -> None:
    result = refused("m-7", Refuse(status, "why"))
    assert (result.command_id, result.success, result.data.status, result.invalidated) == ("m-7", False, status, [])


def test_added_one() -> None:
    assert wire(added("m-1", [412], KEYS)) == {
        "command_id": "m-1",
        "success": True,
        "error": None,
        "data": {"status": "added", "reason": None, "memory_id": 412, "memory_ids": [412], "skipped_duplicates": 0},
        "invalidated": [{"cache": "tomori_state", "key": "500"}, {"cache": "user", "key": "100"}],
    }


@pytest.mark.parametrize("ids", [[412, 413], [1, 2, 3]])
def test_added_several_has_no_single_memory_id(ids: list[int]) -> None:
    data = wire(added("m-1", ids, KEYS[:1], skipped_duplicates=2))["data"]
    assert data == {"status": "added", "reason": None, "memory_ids": ids, "skipped_duplicates": 2}


def test_added_copies_its_inputs() -> None:
    ids = [1]
    keys = list(KEYS)
    result = added("m-1", ids, keys)
    ids.append(2)
    keys.clear()
    assert result.data.memory_ids == [1] and result.invalidated == KEYS


def test_invalidated_may_be_any_iterable() -> None:
    assert updated("m-1", 5, (key for key in KEYS)).invalidated == KEYS


@pytest.mark.parametrize(
    ("result", "status", "memory_id", "invalidated"),
    [
        (updated("m-1", 5, KEYS[:1]), UPDATED, 5, KEYS[:1]),
        (unchanged("m-1", 6), UNCHANGED, 6, []),
        (removed("m-1", 7, KEYS[1:]), REMOVED, 7, KEYS[1:]),
        (seeded("m-1", 8, KEYS[1:]), SEEDED, 8, KEYS[1:]),
    ],
)
def test_single_row_successes(result: OpResult, status: str, memory_id: int, invalidated: list[CacheKey]) -> None:
    assert (result.success, result.error, result.invalidated) == (True, None, invalidated)
    assert wire(result)["data"] == {"status": status, "reason": None, "memory_id": memory_id}


@pytest.mark.parametrize("count", [0, 3])
def test_reinforced(count: int) -> None:
    result = reinforced("r-1", count)
    assert (result.success, result.error, result.invalidated) == (True, None, [])
    assert wire(result)["data"] == {"status": REINFORCED, "reason": None, "count": count}


def test_skipped_is_a_success_with_its_reason() -> None:
    result = skipped("s-1", "already seeded")
    assert (result.success, result.error, result.invalidated) == (True, None, [])
    assert wire(result)["data"] == {"status": SKIPPED, "reason": "already seeded"}


def test_failed() -> None:
    result = failed("m-9", "the database stayed unavailable")
    assert wire(result) == {
        "command_id": "m-9",
        "success": False,
        "error": "the database stayed unavailable",
        "data": {"status": "failed", "reason": "the database stayed unavailable"},
        "invalidated": [],
    }
    assert FAILED == "failed"


def test_results_round_trip_through_the_contract_type() -> None:
    for result in (
        added("m-1", [1, 2], KEYS, 1),
        refused("m-1", Refuse(BATCH_LIMIT_REACHED, "r", {"available": 1, "requested": 3})),
        reinforced("m-1", 2),
    ):
        assert msgspec.json.decode(msgspec.json.encode(result), type=OpResult) == result


def test_imported_lists_ids_removed_and_skipped_and_never_a_single_memory_id() -> None:
    assert wire(imported("m-1", [412], 3, 2, KEYS))["data"] == {
        "status": "imported", "reason": None, "memory_ids": [412], "skipped_duplicates": 2, "removed_count": 3}


def test_imported_nothing_invalidates_nothing() -> None:
    result = wire(imported("m-1", [], 0, 4, []))
    assert (result["success"], result["data"]["memory_ids"], result["invalidated"]) == (True, [], [])
