"""The pure parts of MEMORY_COMMANDS's retention (worker/consuming/administration/retention.py): where a
consumer's acknowledged commands end, and when the backlog nears the stream's limits."""

from __future__ import annotations

import pytest
from nats.js.api import ConsumerConfig, ConsumerInfo, SequenceInfo, StreamState

from worker.consuming.administration.retention import AT_RISK_SHARE, Backlog, at_risk, consumed_below
from worker.consuming.administration.streams import CommandRetention


def _info(delivered: int, floor: int, ack_pending: int, pending: int = 0) -> ConsumerInfo:
    return ConsumerInfo(name="p0", stream_name="MEMORY_COMMANDS", config=ConsumerConfig(), created=None,
                        num_ack_pending=ack_pending, num_pending=pending,
                        delivered=SequenceInfo(consumer_seq=delivered, stream_seq=delivered),
                        ack_floor=SequenceInfo(consumer_seq=floor, stream_seq=floor))


@pytest.mark.parametrize(
    ("delivered", "floor", "ack_pending", "pending", "below"),
    [
        (0, 0, 0, 0, 1),        # nothing delivered yet: nothing to remove
        (10, 10, 0, 0, 11),     # all done
        (10, 7, 0, 0, 11),      # nothing awaits an ack: the floor may lag, what was delivered is done
        (10, 7, 2, 0, 8),       # two in hand: only below the floor
        (10, 7, 2, 5, 8),       # and some waiting, undelivered
        (10, 10, 0, 5, 11),     # only undelivered ones left: they are above what was delivered
    ],
)
def test_consumed_below(delivered, floor, ack_pending, pending, below):
    assert consumed_below(_info(delivered, floor, ack_pending, pending)) == below


def test_a_consumer_without_sequences_yet_removes_nothing():
    assert consumed_below(ConsumerInfo(name="p0", stream_name="MEMORY_COMMANDS", config=ConsumerConfig(), created=None,
                                       num_ack_pending=0)) == 1


def _state(size: int) -> StreamState:
    return StreamState(messages=1, bytes=size, first_seq=1, last_seq=1, consumer_count=17)


LIMITS = CommandRetention(max_age_s=1000.0, max_bytes=10_000)


@pytest.mark.parametrize(
    ("age", "size", "near"),
    [
        (0.0, 0, []),
        (AT_RISK_SHARE * 1000 - 1, AT_RISK_SHARE * 10_000 - 1, []),
        (AT_RISK_SHARE * 1000, 0, ["age"]),
        (0.0, AT_RISK_SHARE * 10_000, ["size"]),
        (999.0, 9_999, ["age", "size"]),
    ],
)
def test_at_risk_names_the_limit_being_approached(age, size, near):
    said = at_risk(Backlog(unconsumed=1, oldest_age_s=age, stream=_state(int(size))), LIMITS)
    assert len(said) == len(near)
    for words, limit in zip(said, near, strict=True):
        assert ("COMMAND_MAX_AGE_HOURS" if limit == "age" else "COMMAND_MAX_MIB") in words


def test_no_size_limit_is_never_near():
    assert at_risk(Backlog(1, 0.0, _state(10**12)), CommandRetention(max_age_s=1000.0, max_bytes=-1)) == []
