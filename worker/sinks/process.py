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
  worker's schema (db/directory_functions.py). It never fails its caller: a
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

Both run as one FastStream application (worker/sinks/app.py): one subscriber per sink on its
durable, in batches, acknowledged by the handlers themselves. `run_sinks` (what `memoryctl sinks`
calls) runs whichever sinks are configured until `stop`."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from worker.sinks.app import SinksConfig, _Stopped, build


async def run_sinks(nats_url: str, database_url: str | None, jsonl_path: Path | None, retention_days: int,
                    stop: asyncio.Event, *, consumer_prefix: str = "metrics-sink",
                    connect_options: dict[str, Any] | None = None, metrics_host: str = "127.0.0.1",
                    metrics_port: int = 0, fetch_timeout: float = 1.0) -> None:
    """Run the configured sinks (JSON lines when `jsonl_path`, PostgreSQL when `database_url`)
    until `stop` is set. Durable consumers are `<consumer_prefix>-jsonl` and
    `<consumer_prefix>-postgres` on MEMORY_EVENTS. `connect_options` go to nats.connect
    (credentials, TLS, inbox_prefix: `NatsAuth.connect_options()`); `metrics_port` serves the
    sinks' /metrics (0: none).

    NATS or PostgreSQL being unavailable at start is waited out (logged once). Raises
    ValueError when no sink is configured, RuntimeError when another sink holds the file.
    """
    config = SinksConfig(nats_url=nats_url, database_url=database_url, jsonl_path=jsonl_path,
                         retention_days=retention_days, consumer_prefix=consumer_prefix,
                         connect_options=connect_options or {}, metrics_host=metrics_host,
                         metrics_port=metrics_port, fetch_timeout=fetch_timeout)
    sinks = build(config, stop=stop, sinks=config.sinks())
    with contextlib.suppress(_Stopped):
        await sinks.app.run()
