"""What happens to a delivery, decided without I/O: ack it, hand it back with a delay, dead
letter it, or give up answering with the result already stored; and how long a delivery waits
when settling it failed. Every nak the handler sends is decided here;
worker/consuming/intake/handlers.py carries the decisions out, and
tests/unit/test_delivery_decisions.py has a row for every branch."""

from __future__ import annotations

from dataclasses import dataclass

from worker.consuming import dead_letters

# A message delivered this many times MAX_DELIVER without ever failing cleanly is poison.
REDELIVERY_LIMIT_FACTOR = 3
# An invalid command whose dead letter could not be written comes back after this long.
INVALID_NOT_RECORDED_DELAY_S = 1.0


def retry_delay(deliveries: int) -> float:
    """Seconds before the next attempt: 0.5, 1, 2, 4 ... capped at 30."""
    return min(0.5 * 2.0 ** max(deliveries - 1, 0), 30.0)


@dataclass(frozen=True, slots=True)
class Ack:
    """Done: its result is stored and answered."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Back to the server for a later attempt; the workspace's later commands wait for it."""
    delay: float
    waiting_for_dependency: bool  # a dependency is away: this delivery does not count


@dataclass(frozen=True, slots=True)
class GiveUp:
    """No more attempts. What is answered depends on what the inbox holds (give_up_with)."""
    permanent: bool


@dataclass(frozen=True, slots=True)
class DeadLetter:
    reason: str  # dead_letters.PERMANENT or dead_letters.EXHAUSTED


@dataclass(frozen=True, slots=True)
class AnswerStored:
    """The command was applied after all (the failure came after commit): its stored result
    is the answer, sent once the events stored with it are in MEMORY_EVENTS (when this
    delivery applied it: worker/services/base.py, republishes())."""


Decision = Ack | Retry | GiveUp


def before_running(deliveries: int, max_deliver: int) -> GiveUp | None:
    """Delivered far past the budget without ever reaching a failure path, it kills or hangs
    the worker: give up without running it again."""
    if deliveries > REDELIVERY_LIMIT_FACTOR * max_deliver:
        return GiveUp(permanent=True)
    return None


def after_running(*, failed: bool, permanent: bool = False, unavailable: bool = False, deliveries: int = 1,
                  counted: int = 1, max_deliver: int = 1) -> Decision:
    """`counted`: the deliveries that count toward max_deliver (those spent waiting out an
    outage do not)."""
    if not failed:
        return Ack()
    if unavailable:
        return Retry(retry_delay(deliveries), waiting_for_dependency=True)
    if not permanent and counted < max_deliver:
        return Retry(retry_delay(deliveries), waiting_for_dependency=False)
    return GiveUp(permanent=permanent)


def give_up_with(give_up: GiveUp, *, stored: bool) -> DeadLetter | AnswerStored:
    if stored:
        return AnswerStored()
    return DeadLetter(dead_letters.PERMANENT if give_up.permanent else dead_letters.EXHAUSTED)


def after_invalid_not_recorded() -> Retry:
    """An invalid command whose dead letter or answer could not be sent (NATS away): again
    shortly; nothing ran, so nothing counts."""
    return Retry(INVALID_NOT_RECORDED_DELAY_S, waiting_for_dependency=True)


def after_give_up_failed(deliveries: int) -> Retry:
    """Giving up failed (the dead letter, the stored result or the answer could not be had):
    again later, as after any failure, until giving up succeeds; never dropped."""
    return Retry(retry_delay(deliveries), waiting_for_dependency=True)
