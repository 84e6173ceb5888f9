import asyncio

import asyncpg
import nats.errors
import nats.js.errors
import pytest

from worker.consuming.intake.failures import FailureLedger, is_permanent, is_unavailable


@pytest.mark.parametrize("exc", [asyncpg.NumericValueOutOfRangeError("x"), asyncpg.CheckViolationError("x"),
                                 asyncpg.RaiseError("x"), asyncpg.UniqueViolationError("x")])
def test_bad_data_is_permanent(exc):
    assert is_permanent(exc) and not is_unavailable(exc)


@pytest.mark.parametrize("exc", [ConnectionRefusedError(), asyncpg.CannotConnectNowError("x"),
                                 asyncpg.InterfaceError("x"), nats.errors.ConnectionClosedError(),
                                 nats.js.errors.NoStreamResponseError(), asyncio.TimeoutError(),
                                 asyncpg.DiskFullError("x"), asyncpg.OutOfMemoryError("x"),
                                 asyncpg.TooManyConnectionsError("x")])
def test_an_unreachable_dependency_is_waited_out(exc):
    assert is_unavailable(exc) and not is_permanent(exc)


@pytest.mark.parametrize("exc", [asyncpg.SerializationError("x"), asyncpg.LockNotAvailableError("x"),
                                 asyncpg.QueryCanceledError("x"), RuntimeError("bug")])
def test_other_failures_are_retried_within_the_budget(exc):
    assert not is_permanent(exc) and not is_unavailable(exc)


def test_deliveries_spent_waiting_do_not_count():
    ledger = FailureLedger()
    first = ledger.note(7, unavailable=True).first_failed_at
    ledger.note(7, unavailable=True)
    assert ledger.counted_deliveries(7, 3) == 1
    assert ledger.note(7, unavailable=False).first_failed_at == first
    assert ledger.counted_deliveries(8, 3) == 3
    ledger.forget(7)
    assert ledger.counted_deliveries(7, 3) == 3


def test_the_ledger_is_bounded():
    ledger = FailureLedger(limit=2)
    for seq in (1, 2, 3):
        ledger.note(seq, unavailable=True)
    assert ledger.counted_deliveries(1, 5) == 5  # the oldest record was dropped
    assert ledger.counted_deliveries(3, 5) == 4
