"""Which failures retrying can fix."""

from __future__ import annotations

import asyncpg

# Deterministic database refusals: the same data fails the same way on every attempt, so
# retrying only blocks the partition. Everything else (connection loss, lock or statement
# timeout, serialization failure, a broker hiccup) is retried with a growing delay.
_PERMANENT = (
    asyncpg.DataError,  # SQLSTATE class 22: out-of-range numbers, bad text
    asyncpg.IntegrityConstraintViolationError,  # class 23
    asyncpg.RaiseError,  # P0001: a RAISE in a server-side function or trigger
)


def is_permanent(exc: BaseException) -> bool:
    return isinstance(exc, _PERMANENT)
