"""Metrics sinks: durable JetStream consumers of `metrics.>` on MEMORY_EVENTS (DESIGN.md 3.5, 7).

Two sinks, each with its own durable pull consumer (so each sees every metric, and a sink that
was down catches up from the stream, which keeps events for 7 days):

- `JsonLinesSink(path)` appends one JSON line per metric::

      {"metric": "memory_eviction", "fields": {"scope": "server", "decay_days": 30},
       "event_id": "metric:<random hex>", "received_at": "2025-01-01T00:00:00.000000+00:00"}

  A batch of lines is written and fsynced before its messages are acknowledged, so nothing is
  lost. Duplicates are prevented by event id (the `Nats-Msg-Id` header): on start the sink
  reads the ids of the last `remember` lines (default 10,000, far more than can be in flight)
  from the tail of the file, and it remembers what it writes; a redelivered metric already in
  the file is acknowledged without being written again. A partial last line left by a crash
  mid-write is cut off on start (its message was never acknowledged and comes again). One
  process writes a file: an exclusive `flock` makes a second sink on the same path fail at once.
  A metric without a `Nats-Msg-Id` (the worker always sets one) has `"event_id": null` and is
  at-least-once.

- `PostgresSink(pool)` inserts into `metric_samples(metric_name, fields, created_at, event_id)`
  (`fields` the payload object as jsonb, `created_at` the time the stream stored the metric, so a
  sink catching up does not bunch old samples at "now"; `event_id` unique, so a redelivery
  after a lost acknowledgement is stored once; db/standalone.sql), through
  `memory_worker.memory_record_metric()`: in an adopted TomoriBot database the samples go into
  the bot's own `metric_samples(metric_name, fields, created_at)` and the event ids into the
  worker's schema (db/facts.py). It never fails its caller: a
  database error is logged once (`metric_sink_db_failed`) until the next success
  (`metric_sink_db_recovered`), and the messages are nak'ed with a growing delay, so they are
  retried until the database is back (`max_deliver` is unlimited; nothing is dropped). Rows
  older than `METRIC_SAMPLE_RETENTION_DAYS` are deleted at start and every hour, in bounded
  batches.

Validation (both sinks): the subject must be `metrics.<name>` and the payload a JSON object.
`memory_eviction` must be exactly `{"scope": "server"|"personal", "decay_days": int >= 1}`.
Other metric families are accepted when they are a flat object of at most 32 scalar fields
(strings, numbers, booleans, null) of at most 4 KiB: the sinks record them as they are. A
message that fails validation is logged (`metric_rejected`, with the subject, event id and
reason, never the payload) and acknowledged: retrying cannot make it valid, and a sink must not
stall or loop on it. It is still in the stream for an operator to inspect.

`run_sinks` (what `memoryctl sinks` calls) runs whichever sinks are configured until `stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import nats
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects

try:  # POSIX: one writer per JSON-lines file.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

METRICS_PREFIX = "metrics."
METRICS_FILTER = "metrics.>"
JSONL_DURABLE = "metrics-sink-jsonl"
POSTGRES_DURABLE = "metrics-sink-postgres"
MAX_GENERIC_FIELDS = 32
MAX_METRIC_BYTES = 4096

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode


# --------------------------------------------------------------------------------------------
# Validation


class InvalidMetric(ValueError):
    """A metric the sinks will not record (logged and acknowledged, never retried)."""


def _eviction(fields: dict[str, Any]) -> None:
    if set(fields) != {"scope", "decay_days"}:
        raise InvalidMetric(f"memory_eviction must have exactly scope and decay_days, got {sorted(fields)}")
    if fields["scope"] not in ("server", "personal"):
        raise InvalidMetric("memory_eviction scope must be 'server' or 'personal'")
    days = fields["decay_days"]
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise InvalidMetric("memory_eviction decay_days must be a positive integer")


def _generic(fields: dict[str, Any]) -> None:
    if len(fields) > MAX_GENERIC_FIELDS:
        raise InvalidMetric(f"more than {MAX_GENERIC_FIELDS} fields")
    for key, value in fields.items():
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise InvalidMetric(f"field {key!r} is not a scalar")


# One validator per known metric; anything else under metrics.> goes through _generic.
VALIDATORS: dict[str, Callable[[dict[str, Any]], None]] = {
    subjects.METRIC_EVICTION_SUBJECT.removeprefix(METRICS_PREFIX): _eviction,
}


def parse_metric(subject: str, data: bytes) -> tuple[str, dict[str, Any]]:
    """`(name, fields)` of a metric message, or InvalidMetric saying why not."""
    name = subject.removeprefix(METRICS_PREFIX)
    if not subject.startswith(METRICS_PREFIX) or not name:
        raise InvalidMetric(f"not a metrics subject: {subject!r}")
    if len(data) > MAX_METRIC_BYTES:
        raise InvalidMetric(f"payload over {MAX_METRIC_BYTES} bytes")
    try:
        fields = _decode(data)
    except msgspec.DecodeError:
        raise InvalidMetric("payload is not JSON") from None
    if not isinstance(fields, dict):
        raise InvalidMetric("payload is not a JSON object")
    VALIDATORS.get(name, _generic)(fields)
    return name, fields


def _event_id(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Nats-Msg-Id") or None


# --------------------------------------------------------------------------------------------
# Consumer loop shared by both sinks


class _Sink:
    kind = "sink"

    def __init__(self, *, durable: str, stream: str, batch: int, fetch_timeout: float, ack_wait: float,
                 max_ack_pending: int, logger: Any | None) -> None:
        self.durable = durable
        self.stream = stream
        self.batch = batch
        self.fetch_timeout = fetch_timeout
        self.ack_wait = ack_wait
        self.max_ack_pending = max_ack_pending
        self.log = logger if logger is not None else structlog.get_logger("memory.sinks").bind(
            sink=self.kind, consumer=durable)

    def consumer_config(self) -> ConsumerConfig:
        return ConsumerConfig(
            # `name` too: nats-py then uses the create API whose subject carries the filter,
            # which is what a metrics-only user is permitted (deploy/nats/accounts.conf).
            name=self.durable,
            durable_name=self.durable,
            filter_subject=METRICS_FILTER,
            ack_policy=AckPolicy.EXPLICIT,
            # A new sink starts with what the stream still holds (limits retention, 7 days).
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=self.ack_wait,
            # Unlimited: a sink retries until it can record a metric (invalid ones are acked).
            max_deliver=-1,
            max_ack_pending=self.max_ack_pending,
        )

    async def _bind(self, js: JetStreamContext) -> JetStreamContext.PullSubscription:
        # Create or update with the full config: nats-py would bind to a drifted durable as is.
        await js.add_consumer(self.stream, self.consumer_config())
        return await js.pull_subscribe_bind(durable=self.durable, stream=self.stream)

    async def _open(self) -> None:
        pass

    async def _close(self) -> None:
        pass

    async def handle(self, msgs: list[Msg]) -> None:
        raise NotImplementedError

    def _reject(self, msg: Msg, reason: str) -> None:
        self.log.warning("metric_rejected", subject=msg.subject, event_id=_event_id(msg), reason=reason)

    async def run(self, js: JetStreamContext, stop: asyncio.Event) -> None:
        """Consume until `stop` is set; a batch in hand is finished first."""
        await self._open()
        sub = None
        failing = False
        try:
            self.log.info("metric_sink_started", stream=self.stream, filter=METRICS_FILTER)
            while not stop.is_set():
                try:
                    if sub is None:
                        sub = await self._bind(js)
                    msgs = await sub.fetch(self.batch, timeout=self.fetch_timeout)
                except TimeoutError:  # nats.errors.TimeoutError too: nothing to do right now
                    continue
                except Exception as exc:  # disconnected, consumer deleted, stream missing ...
                    if not failing:
                        self.log.warning("metric_sink_fetch_failed", error=repr(exc))
                        failing = True
                    if sub is not None:
                        with contextlib.suppress(Exception):
                            await sub.unsubscribe()
                        sub = None
                    await _sleep_or_stop(stop, 1.0)
                    continue
                if failing:
                    self.log.info("metric_sink_fetch_recovered")
                    failing = False
                try:
                    await self.handle(msgs)
                except Exception as exc:  # never die on a batch: unacked messages come back
                    self.log.error("metric_sink_batch_failed", error=repr(exc), messages=len(msgs))
        finally:
            if sub is not None:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
            await self._close()
            self.log.info("metric_sink_stopped")


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


# --------------------------------------------------------------------------------------------
# JSON lines


class JsonLinesSink(_Sink):
    """One JSON line per metric in `path`; see the module docstring."""

    kind = "jsonl"

    def __init__(self, path: Path | str, *, durable: str = JSONL_DURABLE, stream: str = subjects.EVENTS_STREAM,
                 remember: int = 10_000, fsync: bool = True, batch: int = 64, fetch_timeout: float = 1.0,
                 ack_wait: float = 30.0, max_ack_pending: int = 1000, logger: Any | None = None) -> None:
        super().__init__(durable=durable, stream=stream, batch=batch, fetch_timeout=fetch_timeout,
                         ack_wait=ack_wait, max_ack_pending=max_ack_pending, logger=logger)
        self.path = Path(path)
        self.remember = remember
        self.fsync = fsync
        self._fd: int | None = None
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._write_failing = False

    async def _open(self) -> None:
        self._fd = await asyncio.to_thread(self._open_file)

    def _open_file(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise RuntimeError(f"another metrics sink is writing {self.path}") from None
            ids, end, size = _scan_tail(fd, self.remember)
            if end < size:
                os.ftruncate(fd, end)
                self.log.warning("metric_jsonl_partial_line_dropped", path=str(self.path), bytes=size - end)
        except BaseException:
            os.close(fd)
            raise
        for event_id in ids:
            self._remember(event_id)
        self.log.info("metric_jsonl_opened", path=str(self.path), remembered=len(self._seen))
        return fd

    async def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None

    def _remember(self, event_id: str) -> None:
        self._seen[event_id] = None
        self._seen.move_to_end(event_id)
        while len(self._seen) > self.remember:
            self._seen.popitem(last=False)

    async def handle(self, msgs: list[Msg]) -> None:
        assert self._fd is not None, "run() opens the file"
        received_at = datetime.now(UTC).isoformat()
        lines: list[bytes] = []
        new_ids: list[str] = []
        to_ack: list[Msg] = []
        written: list[Msg] = []
        for msg in msgs:
            event_id = _event_id(msg)
            try:
                name, fields = parse_metric(msg.subject, msg.data)
            except InvalidMetric as exc:
                self._reject(msg, str(exc))
                to_ack.append(msg)
                continue
            if event_id is not None and (event_id in self._seen or event_id in new_ids):
                to_ack.append(msg)  # already in the file: a redelivery after a lost ack
                continue
            lines.append(_encode({"metric": name, "fields": fields, "event_id": event_id,
                                  "received_at": received_at}) + b"\n")
            if event_id is not None:
                new_ids.append(event_id)
            written.append(msg)
        if lines:
            try:
                await asyncio.to_thread(_append_durably, self._fd, b"".join(lines), self.fsync)
            except OSError as exc:
                if not self._write_failing:
                    self.log.error("metric_jsonl_write_failed", path=str(self.path), error=repr(exc))
                    self._write_failing = True
                for msg in written:
                    await _nak(msg, _delay(msg, 1.0, 60.0))
                written = []
            else:
                if self._write_failing:
                    self.log.info("metric_jsonl_write_recovered", path=str(self.path))
                    self._write_failing = False
                for event_id in new_ids:
                    self._remember(event_id)
        for msg in to_ack + written:  # only after the lines are on disk
            await msg.ack()


def _scan_tail(fd: int, keep: int) -> tuple[list[str], int, int]:
    """Event ids of the last `keep` complete lines, the offset after the last newline, the size."""
    size = os.fstat(fd).st_size
    pos, buf, newlines = size, b"", 0
    while pos > 0 and newlines <= keep:
        step = min(64 * 1024, pos)
        pos -= step
        chunk = os.pread(fd, step, pos)
        newlines += chunk.count(b"\n")
        buf = chunk + buf
    last = buf.rfind(b"\n")
    end = pos + last + 1  # 0 when there is no complete line at all
    lines = buf[: last + 1].split(b"\n")[:-1]
    if pos > 0:
        lines = lines[1:]  # the first one may start before what was read
    ids = []
    for raw in lines[-keep:] if keep else []:
        try:
            obj = _decode(raw)
        except msgspec.DecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event_id"), str):
            ids.append(obj["event_id"])
    return ids, end, size


def _append_durably(fd: int, data: bytes, fsync: bool) -> None:
    before = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
    except OSError:
        # Leave no partial line behind: the batch is nak'ed and written again later.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, before)
        raise


# --------------------------------------------------------------------------------------------
# PostgreSQL


# Where the samples go, and how a redelivery is stored once, is the database mode's
# (db/facts.py): the bot's own metric_samples in an adopted TomoriBot database.
_INSERT = "SELECT memory_worker.memory_record_metric($1, $2::jsonb, $3, $4)"

_PRUNE = "SELECT memory_worker.memory_prune_metric_samples($1, $2)"


class PostgresSink(_Sink):
    """Rows in `metric_samples`; see the module docstring."""

    kind = "postgres"

    def __init__(self, pool: asyncpg.Pool, *, retention_days: int = 30, durable: str = POSTGRES_DURABLE,
                 stream: str = subjects.EVENTS_STREAM, prune_interval: float = 3600.0, prune_batch: int = 10_000,
                 retry_delay: float = 1.0, max_retry_delay: float = 60.0, db_timeout: float = 10.0,
                 batch: int = 64, fetch_timeout: float = 1.0, ack_wait: float = 30.0,
                 max_ack_pending: int = 1000, logger: Any | None = None) -> None:
        if retention_days < 1:
            raise ValueError("retention_days must be at least 1")
        super().__init__(durable=durable, stream=stream, batch=batch, fetch_timeout=fetch_timeout,
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
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(_INSERT, rows)

    async def prune(self) -> int:
        """Delete samples older than the retention, in bounded batches; returns how many.

        Raises on a database error (run() logs it once and tries again later).
        """
        total = 0
        while True:
            deleted = await self.pool.fetchval(_PRUNE, self.retention_days, self.prune_batch,
                                               timeout=self.db_timeout)
            total += deleted
            if deleted < self.prune_batch:
                return total

    async def _prune_loop(self, stop: asyncio.Event) -> None:
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

    async def run(self, js: JetStreamContext, stop: asyncio.Event) -> None:
        pruner = asyncio.create_task(self._prune_loop(stop), name="metric-samples-prune")
        try:
            await super().run(js, stop)
        finally:
            pruner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pruner


def _delay(msg: Msg, base: float, cap: float) -> float:
    try:
        deliveries = msg.metadata.num_delivered
    except Exception:
        deliveries = 1
    return min(cap, base * 2 ** min(max(deliveries - 1, 0), 16))


async def _nak(msg: Msg, delay: float) -> None:
    with contextlib.suppress(Exception):  # a lost nak only means redelivery after ack_wait
        await msg.nak(delay=delay)


# --------------------------------------------------------------------------------------------
# Running them


async def run_sinks(nats_url: str, database_url: str | None, jsonl_path: Path | None, retention_days: int,
                    stop: asyncio.Event, *, consumer_prefix: str = "metrics-sink",
                    connect_options: dict[str, Any] | None = None) -> None:
    """Run the configured sinks (JSON lines when `jsonl_path`, PostgreSQL when `database_url`)
    until `stop` is set. Durable consumers are `<consumer_prefix>-jsonl` and
    `<consumer_prefix>-postgres` on MEMORY_EVENTS. `connect_options` go to nats.connect
    (credentials, TLS, inbox_prefix: `NatsAuth.connect_options()`).

    NATS or PostgreSQL being unavailable at start is waited out (logged once). Raises
    ValueError when no sink is configured, RuntimeError when another sink holds the file.
    """
    if not database_url and jsonl_path is None:
        raise ValueError("no metrics sink configured: give a JSON-lines path, a database URL, or both")
    if retention_days < 1:
        raise ValueError("retention_days must be at least 1")
    log = structlog.get_logger("memory.sinks")
    nc = await _connect(nats_url, stop, log, connect_options)
    if nc is None:
        return
    try:
        js = nc.jetstream()
        if not await _wait_for_events_stream(js, stop, log):
            return
        jobs = []
        if jsonl_path is not None:
            jobs.append(JsonLinesSink(jsonl_path, durable=f"{consumer_prefix}-jsonl").run(js, stop))
        if database_url:
            jobs.append(_run_postgres(database_url, retention_days, js, stop, f"{consumer_prefix}-postgres", log))
        tasks = [asyncio.create_task(job) for job in jobs]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    raise task.exception()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        with contextlib.suppress(Exception):
            await nc.drain()


async def _connect(nats_url: str, stop: asyncio.Event, log: Any,
                   connect_options: dict[str, Any] | None = None) -> nats.NATS | None:
    failing = False  # connection errors are logged once until the next (re)connect

    async def on_error(exc: Exception) -> None:
        nonlocal failing
        if not failing:
            log.warning("metric_sinks_nats_error", error=repr(exc))
            failing = True

    async def on_disconnect() -> None:
        log.warning("metric_sinks_nats_disconnected")

    async def on_reconnect() -> None:
        nonlocal failing
        failing = False
        log.info("metric_sinks_nats_reconnected")

    options: dict[str, Any] = {"name": "memory-metrics-sinks", "max_reconnect_attempts": -1,
                               "reconnect_time_wait": 1.0, "error_cb": on_error, "disconnected_cb": on_disconnect,
                               "reconnected_cb": on_reconnect, **(connect_options or {})}
    connect = asyncio.create_task(nats.connect(nats_url.split(","), **options))
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({connect, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if connect.done():
        nc = connect.result()
        if failing:
            log.info("metric_sinks_nats_connected")
            failing = False
        return nc
    connect.cancel()
    with contextlib.suppress(BaseException):
        await connect
    return None


async def _wait_for_events_stream(js: JetStreamContext, stop: asyncio.Event, log: Any) -> bool:
    """Wait until MEMORY_EVENTS exists (the sinks may start before the worker, which owns the
    stream and its settings); False when stopped first."""
    waiting = False
    while not stop.is_set():
        try:
            await js.stream_info(subjects.EVENTS_STREAM)
            return True
        except NotFoundError:
            if not waiting:
                log.info("metric_sinks_waiting_for_stream", stream=subjects.EVENTS_STREAM)
                waiting = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
    return False


async def _run_postgres(database_url: str, retention_days: int, js: JetStreamContext, stop: asyncio.Event,
                        durable: str, log: Any) -> None:
    from db.migrate import migrate_dsn
    from db.connection import SERVER_SETTINGS

    failing = False
    pool = None
    while pool is None and not stop.is_set():
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
    if pool is None:
        return
    if failing:
        log.info("metric_sink_db_recovered", sink="postgres")
    try:
        await PostgresSink(pool, retention_days=retention_days, durable=durable).run(js, stop)
    finally:
        await pool.close()
