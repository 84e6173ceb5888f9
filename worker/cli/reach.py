"""Reaching NATS and PostgreSQL: a server memoryctl cannot reach is one line naming its URL.

Every subcommand connects through `nats_connection` or `database_connection`, and the
long-running ones (run, sinks, demo) hand what their start-up raised to `unreachable`; `main`
prints the resulting `Unreachable` once. The URL is shown with its password masked: an operator
pastes these lines into tickets.
"""

from __future__ import annotations

import re
from typing import Any

import asyncpg
import nats
import nats.errors
from nats.aio.client import Client as NatsClient

EXIT_CODE = 3

# user:password@ in a URL (several NATS URLs may be comma-separated), and a key=value DSN's password.
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/,\s]*):[^@/,\s]*@", re.IGNORECASE)
# A NATS URL's user part alone is a token (nats://TOKEN@host).
_NATS_TOKEN = re.compile(r"(?P<scheme>(?:nats|tls|ws|wss)://)[^:@/,\s]+@", re.IGNORECASE)
_DSN_PASSWORD = re.compile(r"(?P<key>\bpassword\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&\s]*", re.IGNORECASE)

# What a failed connection attempt raises: no listener, no such host, a timeout, a refusal at log-in.
_DATABASE_FAILURES: tuple[type[BaseException], ...] = (
    OSError, TimeoutError, asyncpg.CannotConnectNowError, asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidPasswordError, asyncpg.InvalidCatalogNameError, asyncpg.ConnectionDoesNotExistError)
_NATS_FAILURES: tuple[type[BaseException], ...] = (nats.errors.NoServersError, nats.errors.TimeoutError,
                                                   nats.errors.AuthorizationError)


def masked(url: str) -> str:
    """`url` with any password replaced by ***."""
    url = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url)
    url = _NATS_TOKEN.sub(lambda m: f"{m['scheme']}***@", url)
    url = _QUERY_PASSWORD.sub(lambda m: f"{m['key']}***", url)
    if "://" in url:
        return url
    return _DSN_PASSWORD.sub(lambda m: f"{m['key']}***", url)


class Unreachable(Exception):
    """A server memoryctl could not connect to: which, where (masked) and why, on one line."""

    def __init__(self, server: str, variable: str, url: str, cause: BaseException) -> None:
        self.server, self.variable, self.url = server, variable, masked(url)
        why = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause) or type(cause).__name__
        super().__init__(f"cannot reach {server} at {self.url}: {masked(why)} (is it running? {variable} names it;"
                         " unset, the servers of a running `make run` are used)")


def nats_unreachable(url: str, cause: BaseException) -> Unreachable:
    return Unreachable("NATS", "NATS_URL", url, cause)


def database_unreachable(url: str, cause: BaseException) -> Unreachable:
    return Unreachable("PostgreSQL", "DATABASE_URL", url, cause)


async def _unlogged(exc: Exception) -> None:
    pass


async def nats_connection(url: str, connect_options: dict[str, Any] | None = None) -> NatsClient:
    """An operator command's NATS connection: a couple of attempts, then Unreachable."""
    try:
        # error_cb: each failed attempt would be logged with its traceback; the outcome is said once here.
        return await nats.connect(url.split(","), connect_timeout=5, max_reconnect_attempts=2, error_cb=_unlogged,
                                  **(connect_options or {}))
    except _NATS_FAILURES + (OSError,) as exc:
        raise nats_unreachable(url, exc) from None


async def database_connection(url: str) -> asyncpg.Connection:
    """An operator command's database connection (db.connection's timeouts and search path), else Unreachable."""
    from db.connection import connect

    try:
        return await connect(url)
    except _DATABASE_FAILURES as exc:
        raise database_unreachable(url, exc) from None


def unreachable(exc: BaseException, *, nats_url: str | None, database_url: str | None) -> Unreachable | None:
    """What a process's start-up raised, as Unreachable when it is a failed connection to one of
    its servers; None for anything else (a bug keeps its traceback)."""
    if isinstance(exc, Unreachable):
        return exc
    if nats_url and isinstance(exc, _NATS_FAILURES):
        return nats_unreachable(nats_url, exc)
    if database_url and isinstance(exc, _DATABASE_FAILURES):
        return database_unreachable(database_url, exc)
    return None
