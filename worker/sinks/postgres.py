"""The PostgreSQL sink: rows in metric_samples through memory_record_metric(), retried
until the database is back, old rows pruned. Until its pool is connected (connect_pool(),
which the sinks' lifespan runs in the background) every batch is nak'ed with a delay."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

import asyncpg
from nats.aio.msg import Msg

from worker.sinks.consumer import _delay, _nak, _Sink
from worker.sinks.metrics import POSTGRES_DURABLE, InvalidMetric, _encode, _event_id, parse_metric

# Where the samples go, and how a redelivery is stored once, is the database mode's
# (db/directory_functions.py): the bot's own metric_samples in an adopted TomoriBot database.
_INSERT = "SELECT memory_worker.memory_record_metric($1, $2::jsonb, $3, $4)"

_PRUNE = "SELECT memory_worker.memory_prune_metric_samples($1, $2)"


class PostgresSink(_Sink):
    """Rows in `metric_samples`; see the module docstring."""

    kind = "postgres"

    def __init__(self, pool: asyncpg.Pool | None, *, retention_days: int = 30, durable: str = POSTGRES_DURABLE,
                 prune_interval: float = 3600.0, prune_batch: int = 10_000,
                 retry_delay: float = 1.0, max_retry_delay: float = 60.0, db_timeout: float = 10.0,
                 batch: int = 64, fetch_timeout: float = 1.0, ack_wait: float = 30.0,
                 max_ack_pending: int = 1000, logger: Any | None = None) -> None:
        if retention_days < 1:
            raise ValueError("retention_days must be at least 1")
        super().__init__(durable=durable, batch=batch, fetch_timeout=fetch_timeout,
                         ack_wait=ack_wait, max_ack_pending=max_ack_pending, logger=logger)
        self.pool = pool
        self.retention_days = retention_days
        self.prune_interval = prune_interval
        self.prune_batch = prune_batch
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.db_timeout = db_timeout
        self._db_failing = False

    # One failure state for inserts and pruning: logged once until the next success.
    def _db_failed(self, op: str, exc: BaseException) -> None:
        if not self._db_failing:
            self.log.warning("metric_sink_db_failed", op=op, error=repr(exc))
            self._db_failing = True

    def _db_ok(self) -> None:
        if self._db_failing:
            self.log.info("metric_sink_db_recovered")
            self._db_failing = False

    async def handle(self, msgs: list[Msg]) -> None:
        if self.pool is None:  # not connected yet: the batch comes back once the pool is there
            for msg in msgs:
                await _nak(msg, _delay(msg, self.retry_delay, self.max_retry_delay))
            return
        rows: list[tuple[str, str, datetime | None, str | None]] = []
        valid: list[Msg] = []
        for msg in msgs:
            try:
                name, fields = parse_metric(msg.subject, msg.data)
            except InvalidMetric as exc:
                self._reject(msg, str(exc))
                await msg.ack()
                continue
            stored_at = msg.metadata.timestamp if msg.reply else None
            rows.append((name, _encode(fields).decode(), stored_at or datetime.now(UTC), _event_id(msg)))
            valid.append(msg)
        if not rows:
            return
        try:
            await asyncio.wait_for(self._insert(rows), self.db_timeout)
        except Exception as exc:  # database down, dropped, timed out ...: retry later, never raise
            self._db_failed("insert", exc)
            for msg in valid:
                await _nak(msg, _delay(msg, self.retry_delay, self.max_retry_delay))
            return
        self._db_ok()
        for msg in valid:
            await msg.ack()

    async def _insert(self, rows: list[tuple[str, str, datetime | None, str | None]]) -> None:
        if self.pool is None:  # handle() checks first: a bug if reached
            raise RuntimeError("the metric sink wrote before its pool was there")
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(_INSERT, rows)

    async def prune(self) -> int:
        """Delete samples older than the retention, in bounded batches; returns how many.

        Raises on a database error (prune_forever() logs it once and tries again later).
        """
        if self.pool is None:
            raise RuntimeError("the metric sink pruned before its pool was there")
        total = 0
        while True:
            deleted = await self.pool.fetchval(_PRUNE, self.retention_days, self.prune_batch,
                                               timeout=self.db_timeout)
            total += deleted
            if deleted < self.prune_batch:
                return int(total)

    async def prune_forever(self, stop: asyncio.Event) -> None:
        """Prune now and every prune_interval until `stop`."""
        while not stop.is_set():
            try:
                deleted = await self.prune()
            except Exception as exc:
                self._db_failed("prune", exc)
                wait = min(self.prune_interval, 60.0)  # sooner than the hour once the database is back
            else:
                self._db_ok()
                if deleted:
                    self.log.info("metric_samples_pruned", deleted=deleted, retention_days=self.retention_days)
                wait = self.prune_interval
            await _sleep_or_stop(stop, wait)


async def connect_pool(database_url: str, stop: asyncio.Event, log: Any) -> asyncpg.Pool | None:
    """Migrate and open the sink's pool, retrying until it works (logged once); None when stopped first."""
    from db.connection import SERVER_SETTINGS
    from db.migrate import migrate_dsn

    failing = False
    while not stop.is_set():
        try:
            await migrate_dsn(database_url)  # lock-protected, like the worker's start
            # min_size=0: no background reconnects (and their tracebacks) while the database is down.
            pool = await asyncpg.create_pool(database_url, min_size=0, max_size=4, server_settings={
                "application_name": "memory-metrics-sink", "statement_timeout": "15s", "lock_timeout": "5s",
                **SERVER_SETTINGS})
        except Exception as exc:
            if not failing:
                log.warning("metric_sink_db_failed", sink="postgres", op="connect", error=repr(exc))
                failing = True
            await _sleep_or_stop(stop, 2.0)
            continue
        if failing:
            log.info("metric_sink_db_recovered", sink="postgres")
        return pool
    return None


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
