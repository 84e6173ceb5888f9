"""Metrics sinks: durable JetStream consumers of `metrics.>` on MEMORY_EVENTS (docs/design.md, sections 3.5, 7).

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

`run_sinks` (what `memoryctl sinks` calls) runs whichever sinks are configured until `stop`."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import nats
import structlog
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.sinks.jsonl import JsonLinesSink
from worker.sinks.postgres import _run_postgres

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
