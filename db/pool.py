"""The worker's connection pool: how its connections are set up and released, and a pooled
connection that is closed, not reused, when a call on it fails uncleanly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import asyncpg

from db.connection import SERVER_SETTINGS, Timeouts

# The session setting the inbox's and outbox's tenant columns default to (db/migrations/004_tenants.sql).
TENANT_SETTING = "memory_worker.tenant"


def _init_connection(timeouts: Timeouts) -> Callable[[asyncpg.Connection], Awaitable[None]]:
    async def init(conn: asyncpg.Connection) -> None:
        timeouts.arm(conn)
        # asyncpg hands jsonb over as text; keeping it text lets msgspec decode it straight into
        # Structs, and lets a stored result be replied without a decode/encode round.
        for typ in ("json", "jsonb"):
            await conn.set_type_codec(typ, encoder=lambda v: v, decoder=lambda v: v, schema="pg_catalog")

    return init


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without asyncpg's default reset query (a round trip on every release).

    Pool connections never change session state: locks are transaction-scoped, nothing is
    SET, LISTENed or left open; asyncpg still rolls back a transaction left open.
    """


WORKER_TIMEOUTS = Timeouts(connect_s=10.0, command_s=20.0)


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 20,
                      timeouts: Timeouts = WORKER_TIMEOUTS, tenant: str = "") -> asyncpg.Pool:
    """`tenant`: the bot this worker serves; every inbox row its connections store
    says so (db/migrations/004_tenants.sql). Give MemoryRepository the same."""
    tenant_setting = {TENANT_SETTING: tenant} if tenant else {}
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection(timeouts), reset=_keep_session,
        timeout=timeouts.connect_s, command_timeout=timeouts.command_s,
        # The lock and statement timeouts turn a stuck database into a retryable error
        # instead of a partition that silently stops; the command timeout does the same
        # for a database that stopped answering at all.
        server_settings={"lock_timeout": "5s", "statement_timeout": "15s",
                         "application_name": "memory-worker", **SERVER_SETTINGS, **timeouts.server_settings(),
                         **tenant_setting},
    )


def leaves_connection_usable(exc: BaseException) -> bool:
    """Whether a connection whose call raised `exc` may serve another call.

    Only an error the server reported, on a session it keeps, leaves the protocol at a clean
    point. A call cut short (the command timeout, a cancelled task), a protocol fault
    (asyncpg's InternalClientError) or a lost connection may leave a reply half read or a
    cancel request in flight; with the release hook that skips asyncpg's reset query
    (`_keep_session`), such a connection would go back to the pool as it is, and its next
    user would get `cannot switch to state 12; another operation (2) is in progress`.
    """
    return isinstance(exc, asyncpg.PostgresError) and not isinstance(
        exc, (asyncpg.PostgresConnectionError, asyncpg.AdminShutdownError, asyncpg.CannotConnectNowError))


@asynccontextmanager
async def connection(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection that is closed, not reused, when a call on it fails uncleanly."""
    async with pool.acquire() as conn:
        try:
            yield conn
        except BaseException as exc:
            if not leaves_connection_usable(exc):
                # A connection the server closed is back in the pool's hands already (asyncpg
                # detaches it on close): nothing left to drop, and the first error stands.
                with suppress(asyncpg.InterfaceError):
                    conn.terminate()
            raise


class PooledCalls:
    """The pool's one-call shortcuts (fetchval, fetchrow, fetch, execute), each on a
    connection() so that a call failing uncleanly does not hand its connection on."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with connection(self._pool) as conn:
            return await conn.fetchval(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        async with connection(self._pool) as conn:
            return await conn.fetchrow(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        async with connection(self._pool) as conn:
            rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
            return rows

    async def execute(self, sql: str, *args: Any) -> str:
        async with connection(self._pool) as conn:
            status: str = await conn.execute(sql, *args)
            return status
