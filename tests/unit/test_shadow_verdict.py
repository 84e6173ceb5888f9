"""The shadow trial's verdict (worker/kinds/shadow/verdict.py): a kind is ready with enough
compared pairs, no unexplained difference, few pairs that measured nothing and every status it
can answer seen; each reason it is not is named, with its numbers; the bot may switch only
when every kind it shadowed is ready."""

from __future__ import annotations

import pytest

from worker.kinds.shadow.verdict import (
    KIND_STATUSES,
    NEEDS_A_FAILURE,
    NotMeasuring,
    PairCount,
    PairOutcome,
    Rule,
    StatusesNeverSeen,
    TooFewPairs,
    UnexplainedDifferences,
    unknown_statuses,
    verdict,
)

SEED_STATUSES = ("seeded", "skipped")  # seed_bio's, but the give-up


def count(status: str, outcome: PairOutcome = "agreed", pairs: int = 100, *, intended: bool = False,
          kind: str = "seed_bio") -> PairCount:
    return PairCount(kind=kind, status=status, outcome=outcome, intended=intended, pairs=pairs)


def ready_seed_bio() -> list[PairCount]:
    return [count(status) for status in SEED_STATUSES]


def missing(counts: list[PairCount], rule: Rule = Rule()) -> tuple[object, ...]:
    (kind,) = verdict(counts, rule).kinds
    return kind.missing


def test_a_kind_with_enough_agreeing_pairs_of_every_status_is_ready_and_the_bot_may_switch():
    shown = verdict(ready_seed_bio())
    assert [(k.kind, k.ready) for k in shown.kinds] == [("seed_bio", True)]
    assert shown.switch
    assert shown.not_shadowed == ("create", "manual", "reinforce", "update")


def test_too_few_compared_pairs_say_how_many_of_how_many():
    assert missing([count("seeded", pairs=60), count("skipped", pairs=39)]) == (TooFewPairs(99, 200),)
    assert missing([count("seeded", pairs=60), count("skipped", pairs=39)], Rule(min_pairs=99)) == ()


def test_concurrent_and_differing_pairs_are_compared_pairs():
    counts = [count("seeded", pairs=150), count("skipped", pairs=10), count("seeded", "concurrent", 40)]
    assert missing(counts) == ()
    assert missing(counts[:2]) == (TooFewPairs(160, 200),)


def test_a_difference_is_unexplained_unless_the_worker_differs_there_on_purpose():
    assert missing([*ready_seed_bio(), count("seeded", "differed", 2)]) == (UnexplainedDifferences(2),)
    assert missing([*ready_seed_bio(), count("seeded", "differed", 2, intended=True)]) == ()


def test_a_status_never_seen_is_named_in_the_kinds_order():
    counts = [count(s, kind="update", pairs=20) for s in KIND_STATUSES["update"][3:]]
    (never,) = missing(counts)
    assert isinstance(never, StatusesNeverSeen)
    expected = [s for s in KIND_STATUSES["update"] if s not in NEEDS_A_FAILURE]
    assert never.statuses == KIND_STATUSES["update"][:3] and never.expected == len(expected)


def test_a_status_is_seen_only_where_it_agreed_or_differed_on_purpose():
    for outcome in ("differed", "concurrent", "timed_out", "unpaired", "nothing_compared", "waiting"):
        counts = [count("seeded", pairs=300), count("skipped", outcome, pairs=1)]
        assert StatusesNeverSeen(("skipped",), 2) in missing(counts), outcome
    assert missing([count("seeded", pairs=300), count("skipped", "differed", 1, intended=True)]) == ()


def test_a_status_only_a_failure_reaches_is_never_waited_for():
    assert "failed" in KIND_STATUSES["seed_bio"] and "failed" in NEEDS_A_FAILURE
    assert missing(ready_seed_bio()) == ()


def test_a_status_the_deployment_cannot_reach_is_not_waited_for_when_the_operator_says_so():
    counts = [count("seeded", pairs=200)]
    assert missing(counts) == (StatusesNeverSeen(("skipped",), 2),)
    assert missing(counts, Rule(not_expected=frozenset({"skipped"}))) == ()


def test_too_many_pairs_that_measured_nothing_are_named_with_their_share():
    for outcome in ("timed_out", "unpaired", "nothing_compared", "waiting"):
        assert missing([*ready_seed_bio(), count("seeded", outcome, 10)]) == (), outcome  # 10 of 210: under 5%
        assert missing([*ready_seed_bio(), count("seeded", outcome, 11)]) == (NotMeasuring(11, 211, 0.05),), outcome
    assert missing([*ready_seed_bio(), count("seeded", "timed_out", 11)], Rule(max_unmeasured=0.1)) == ()


def test_every_reason_is_named_at_once():
    counts = [count("seeded", pairs=40), count("seeded", "differed", 2), count("seeded", "timed_out", 30)]
    assert missing(counts) == (StatusesNeverSeen(("skipped",), 2), UnexplainedDifferences(2), TooFewPairs(42, 200),
                               NotMeasuring(30, 72, 0.05))


def test_the_bot_may_switch_only_when_every_kind_it_shadowed_is_ready():
    create = [count(s, kind="create") for s in KIND_STATUSES["create"]]
    assert verdict([*ready_seed_bio(), *create]).switch
    not_ready = verdict([*ready_seed_bio(), *create[1:]])
    assert [(k.kind, k.ready) for k in not_ready.kinds] == [("create", False), ("seed_bio", True)]
    assert not not_ready.switch
    assert not verdict([]).switch and verdict([]).kinds == ()
    assert verdict([count("seeded", pairs=0)]).not_shadowed == tuple(KIND_STATUSES)  # no pair: not shadowed


@pytest.mark.parametrize("kind", list(KIND_STATUSES))
def test_every_kind_can_be_ready_from_its_own_statuses(kind):
    assert verdict([count(s, kind=kind, pairs=200) for s in KIND_STATUSES[kind]]).switch


def test_a_status_no_kind_answers_is_named():
    assert unknown_statuses(["skipped", "memory_saved_successfully", "typo", "also-wrong"]) == ["also-wrong", "typo"]
