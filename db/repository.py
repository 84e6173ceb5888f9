"""Explicit SQL. The owner lock is taken only by the SQL function memory_lock_owner(), which
two places call: memory_create_batch() (the create hot path: one round trip, one transaction)
and MemoryRepository.owner_transaction() (the panels, updates, reinforcement and bio seeds: a
Python transaction that reads and decides under the lock, and writes through db/applier.py)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager

import asyncpg

from contracts.codec import encode
from db.context_rows import CreateContextRow, decode_create_contexts
from db.inbox import BatchRow, StoredInboxRow, decode_inbox_row
from db.pool import PooledCalls, connection
from db.requests import CreateBatchRequest, CreateContextRequest
from db.shadow_pairs import ShadowPairs
from db.transaction import Tx


class MemoryRepository:
    def __init__(self, pool: asyncpg.Pool, tenant: str = "") -> None:
        """`tenant`: as given to create_pool for `pool`."""
        self._raw_pool = pool
        self._pool: PooledCalls | asyncpg.Connection = PooledCalls(pool)  # what each call runs on
        self.tenant = tenant

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MemoryRepository]:
        """This repository with every call on one pooled connection, acquired once (and closed,
        not reused, should a call fail uncleanly): for a create's or a batch's context read
        and writes, which run one after the other. Taking and giving back a pooled connection
        costs about as much client CPU as a short call itself (asyncpg's pool shields each
        release in a task of its own), so a create alone paid it twice.

        The session is a shallow copy: the same class (a test's subclass keeps its overrides)
        and attributes, but its own `_pool`; state a subclass keeps in its attributes is shared
        with the session only through mutable objects."""
        async with connection(self._raw_pool) as conn:
            bound = copy.copy(self)  # the same repository (a test's subclass too), on `conn`
            bound._pool = conn
            yield bound

    @asynccontextmanager
    async def owner_transaction(self, owners: Iterable[tuple[str, str]], *,
                                read_only: bool = False) -> AsyncIterator[Tx]:
        """One transaction holding the advisory locks of `owners` ((scope, Discord id) pairs)
        from its first statement to commit or rollback. A caller that learns its owners inside
        the transaction (reinforcement) passes none and calls Tx.lock_owners once, with all.
        `read_only`: a dry run's, READ ONLY from its BEGIN: PostgreSQL refuses every write in
        it (and a row lock), wherever it comes from, so a dry run cannot write, not even to
        roll back. The advisory locks and the reads are the same as a real run's."""
        async with connection(self._raw_pool) as conn:
            transaction = conn.transaction(readonly=read_only)
            await transaction.start()
            try:
                tx = Tx(conn, self.tenant, read_only=read_only)
                await tx.lock_owners(owners)
                yield tx
            except BaseException:
                await transaction.rollback()
                raise
            await transaction.commit()

    async def create_contexts(self, requests: Sequence[CreateContextRequest]) -> list[CreateContextRow]:
        """memory_create_context() of one or several commands in one round trip, in order."""
        raw = await self._pool.fetchval("SELECT memory_create_contexts($1::jsonb)", encode(requests).decode())
        return decode_create_contexts(raw)

    async def create_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        """memory_create_batch(): the decisions of several creates stored and carried out, one
        transaction; a row per op, in order."""
        rows = await self._pool.fetch("SELECT duplicate, stored FROM memory_create_batch($1::jsonb)",
                                      encode(batch).decode())
        return [BatchRow(row[0], decode_inbox_row(row[1])) for row in rows]

    async def create_dry_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        """memory_create_dry_batch(): the same decisions under the same locks, nothing written;
        a row per op, in order, each the command as it would have been stored."""
        rows = await self._pool.fetch("SELECT duplicate, stored FROM memory_create_dry_batch($1::jsonb)",
                                      encode(batch).decode())
        return [BatchRow(row[0], decode_inbox_row(row[1])) for row in rows]

    async def stored_command(self, command_id: str, workspace_id: str) -> StoredInboxRow | None:
        """A command of this workspace and tenant as stored (never another's)."""
        raw = await self._pool.fetchval(
            "SELECT memory_stored_command(pc) FROM processed_commands pc WHERE pc.command_id = $1"
            " AND pc.workspace_id = $2 AND pc.tenant = $3", command_id, workspace_id, self.tenant)
        return None if raw is None else decode_inbox_row(raw)

    @property
    def shadow_pairs(self) -> ShadowPairs:
        return ShadowPairs(self._pool, self.tenant)

    async def prune(self, inbox_days: int, batch: int) -> int:
        """Remove at most `batch` inbox rows past their retention (worker/consuming/administration/inbox_prune.py)."""
        pruned: int = await self._pool.fetchval("SELECT memory_prune($1, $2)", inbox_days, batch)
        return pruned
