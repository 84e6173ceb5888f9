"""Which failures retrying can fix, which mean a dependency is away, and the ledger of each
failing message's failures (what the delivery decisions count)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
import nats.errors
import nats.js.errors

# Deterministic database refusals: the same data fails the same way on every attempt, so
# retrying only blocks the partition. Dead-lettered at once.
_PERMANENT = (
    asyncpg.DataError,  # SQLSTATE class 22: out-of-range numbers, bad text
    asyncpg.IntegrityConstraintViolationError,  # class 23
    asyncpg.RaiseError,  # P0001: a RAISE in a server-side function or trigger
)

# A dependency is unreachable: not the command's fault. Retried without counting towards
# MAX_DELIVER, so an outage delays commands instead of dead-lettering the whole queue.
_UNAVAILABLE = (
    OSError,  # connection refused or reset (ConnectionError is a subclass)
    asyncpg.PostgresConnectionError,  # class 08
    asyncpg.InterfaceError,  # the connection was lost mid-call
    asyncpg.InternalClientError,  # a pooled connection the server closed while it sat idle
    asyncpg.CannotConnectNowError,  # 57P03: starting up or shutting down
    asyncpg.AdminShutdownError,  # 57P01
    # Class 53, the server is short of a resource: disk full (53100, measured by
    # tests/faults: a full data directory dead-lettered every command past MAX_DELIVER),
    # out of memory, too many connections. Space or memory coming back fixes it.
    asyncpg.InsufficientResourcesError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoRespondersError,  # JetStream not answering (restarting)
    nats.js.errors.NoStreamResponseError,  # a stream without a leader (cluster election, restart)
    asyncio.TimeoutError,  # a publish ack or reply that never came
)


def is_permanent(exc: BaseException) -> bool:
    return isinstance(exc, _PERMANENT)


def is_unavailable(exc: BaseException) -> bool:
    return isinstance(exc, _UNAVAILABLE) and not is_permanent(exc)


@dataclass(slots=True)
class FailureRecord:
    first_failed_at: datetime
    waited_out: int = 0  # deliveries that failed only because a dependency was away


class FailureLedger:
    """Per failing message (by stream sequence): when it first failed, for
    Dlq-First-Failed-At, and how many of its deliveries were spent waiting out an outage,
    which do not count toward MAX_DELIVER. Bounded and in memory: after a worker restart the
    first failure this process saw stands in, and earlier outages count (erring towards
    dead-lettering a little early, never towards retrying forever)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._records: dict[int, FailureRecord] = {}
        self._limit = limit

    def note(self, seq: int, *, unavailable: bool) -> FailureRecord:
        record = self._records.get(seq)
        if record is None:
            if len(self._records) >= self._limit:
                self._records.pop(next(iter(self._records)))
            record = self._records[seq] = FailureRecord(datetime.now(UTC))
        if unavailable:
            record.waited_out += 1
        return record

    def counted_deliveries(self, seq: int, deliveries: int) -> int:
        record = self._records.get(seq)
        return deliveries - record.waited_out if record else deliveries

    def forget(self, seq: int) -> None:
        self._records.pop(seq, None)
