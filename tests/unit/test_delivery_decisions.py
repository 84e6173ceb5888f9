"""worker.consuming.intake.delivery: every branch of what happens to a delivery, one row each."""

from __future__ import annotations

import pytest

from worker.consuming import dead_letters
from worker.consuming.intake.delivery import (
    Ack,
    AnswerStored,
    DeadLetter,
    GiveUp,
    Retry,
    after_give_up_failed,
    after_invalid_not_recorded,
    after_running,
    before_running,
    give_up_with,
)

MAX = 5


@pytest.mark.parametrize("deliveries, expected", [
    (1, None),
    (MAX, None),
    (3 * MAX, None),  # at the poison limit: still run
    (3 * MAX + 1, GiveUp(permanent=True)),  # past it: never run again
])
def test_before_running(deliveries, expected):
    assert before_running(deliveries, MAX) == expected


@pytest.mark.parametrize("row, expected", [
    # succeeded
    (dict(failed=False), Ack()),
    (dict(failed=False, deliveries=9, counted=9), Ack()),
    # a dependency away: wait, however many deliveries, even a "permanent" one
    (dict(failed=True, unavailable=True, deliveries=1, counted=0), Retry(0.5, waiting_for_dependency=True)),
    (dict(failed=True, unavailable=True, deliveries=20, counted=MAX), Retry(30.0, waiting_for_dependency=True)),
    (dict(failed=True, unavailable=True, permanent=True, deliveries=2, counted=2), Retry(1.0, True)),
    # a transient failure: retry with a growing delay while the budget lasts
    (dict(failed=True, deliveries=1, counted=1), Retry(0.5, waiting_for_dependency=False)),
    (dict(failed=True, deliveries=4, counted=MAX - 1), Retry(4.0, waiting_for_dependency=False)),
    # waited-out deliveries do not count: the budget is on `counted`
    (dict(failed=True, deliveries=8, counted=2), Retry(30.0, waiting_for_dependency=False)),
    # the budget spent
    (dict(failed=True, deliveries=MAX, counted=MAX), GiveUp(permanent=False)),
    # permanent: at once
    (dict(failed=True, permanent=True, deliveries=1, counted=1), GiveUp(permanent=True)),
])
def test_after_running(row, expected):
    assert after_running(max_deliver=MAX, **row) == expected


@pytest.mark.parametrize("give_up, stored, expected", [
    (GiveUp(permanent=True), False, DeadLetter(dead_letters.PERMANENT)),
    (GiveUp(permanent=False), False, DeadLetter(dead_letters.EXHAUSTED)),
    (GiveUp(permanent=True), True, AnswerStored()),
    (GiveUp(permanent=False), True, AnswerStored()),
])
def test_give_up_with(give_up, stored, expected):
    assert give_up_with(give_up, stored=stored) == expected


def test_an_invalid_command_whose_dead_letter_failed_comes_back_shortly():
    assert after_invalid_not_recorded() == Retry(1.0, waiting_for_dependency=True)


@pytest.mark.parametrize("deliveries, expected", [
    (1, Retry(0.5, waiting_for_dependency=True)),
    (4, Retry(4.0, waiting_for_dependency=True)),
    (40, Retry(30.0, waiting_for_dependency=True)),  # never dropped: again every 30 s
])
def test_a_give_up_that_failed_is_tried_again(deliveries, expected):
    assert after_give_up_failed(deliveries) == expected
