"""The metrics sinks as a FastStream application: `memoryctl sinks` runs it, and so can
`faststream run worker.sinks.app:app` (configured from the environment, see SinksConfig.from_env).

One subscriber per sink, each on its own durable pull consumer of `metrics.>` on MEMORY_EVENTS,
taking batches (`PullSub(batch=True)`). The lifespan connects (through NatsAuth.connect_options(),
the credentials path of every process), waits for the stream the worker owns, creates or updates
each durable with its full settings (nats-py would bind to a drifted one as it is), opens the
JSON-lines file, connects the PostgreSQL pool in the background and prunes; it closes them after
the broker has stopped, so a batch in hand is finished first.

Acknowledgements are the handlers' own (`AckPolicy.MANUAL`), chosen over FastStream's default
REJECT_ON_ERROR: a batch holds messages with different fates (stored and acked, invalid and acked
after a log line, or nak'ed with a growing delay while the database or the disk fails), and
rejecting (`term`) would drop metrics that a retry would have stored, while NACK_ON_ERROR would
redeliver at once and loop. The handlers never raise; what they could not settle comes back
after ack_wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from wsgiref.simple_server import WSGIServer

import structlog
from faststream import Context, FastStream
from faststream.middlewares import AckPolicy
from faststream.nats import JStream, NatsBroker, PullSub
from faststream.nats.message import NatsBatchMessage
from faststream.nats.prometheus import NatsPrometheusMiddleware
from faststream.specification import AsyncAPI
from nats.js import api as nats_api
from prometheus_client import CollectorRegistry
from pydantic import WithJsonSchema

from contracts import subjects
from worker.sinks import startup
from worker.sinks.consumer import _Sink
from worker.sinks.jsonl import JsonLinesSink
from worker.sinks.metrics import EVICTION_SCHEMA, METRICS_FILTER
from worker.sinks.postgres import PostgresSink, connect_pool

log = structlog.get_logger("memory.sinks")

# The handlers validate each message themselves (worker/sinks/metrics.py) so that one bad metric
# is set aside without failing its batch: FastStream passes the decoded bodies through as they
# are, and the AsyncAPI document shows the one metric the contract defines.
MetricBatch = Annotated[list[Any], WithJsonSchema({"type": "array", "items": EVICTION_SCHEMA})]


@dataclass(frozen=True)
class SinksConfig:
    nats_url: str
    database_url: str | None = None
    jsonl_path: Path | None = None
    retention_days: int = 30
    consumer_prefix: str = "metrics-sink"
    connect_options: dict[str, Any] = field(default_factory=dict)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 0  # the sinks' own /metrics (FastStream's message counters); 0 is off
    batch: int = 64
    fetch_timeout: float = 1.0

    def sinks(self) -> list[_Sink]:
        """The sinks configured (JSON lines when jsonl_path, PostgreSQL when database_url)."""
        if not self.database_url and self.jsonl_path is None:
            raise ValueError("no metrics sink configured: give a JSON-lines path, a database URL, or both")
        if self.retention_days < 1:
            raise ValueError("retention_days must be at least 1")
        sinks: list[_Sink] = []
        if self.jsonl_path is not None:
            sinks.append(JsonLinesSink(self.jsonl_path, durable=f"{self.consumer_prefix}-jsonl",
                                       batch=self.batch, fetch_timeout=self.fetch_timeout))
        if self.database_url:
            sinks.append(PostgresSink(None, retention_days=self.retention_days,
                                      durable=f"{self.consumer_prefix}-postgres",
                                      batch=self.batch, fetch_timeout=self.fetch_timeout))
        return sinks

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> SinksConfig:
        """For `faststream run`: NATS_URL, DATABASE_URL (unset: no PostgreSQL sink), SINKS_JSONL
        (a path: the JSON-lines sink), SINKS_CONSUMER_PREFIX, SINKS_METRICS_PORT, the NATS_*
        credentials and METRIC_SAMPLE_RETENTION_DAYS as everywhere else."""
        from worker.shared.settings import Settings

        env = dict(os.environ if env is None else env)
        settings = Settings.from_env(env)
        jsonl = env.get("SINKS_JSONL", "").strip()
        return cls(nats_url=settings.nats_url or "nats://127.0.0.1:4222", database_url=settings.database_url,
                   jsonl_path=Path(jsonl) if jsonl else None,
                   retention_days=settings.metric_sample_retention_days,
                   consumer_prefix=env.get("SINKS_CONSUMER_PREFIX", "").strip() or "metrics-sink",
                   connect_options=settings.nats_auth.connect_options(), metrics_host=settings.metrics_host,
                   metrics_port=_port(env, "SINKS_METRICS_PORT"))


def _port(env: dict[str, str], var: str) -> int:
    raw = (env.get(var) or "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > 65535:
        raise ValueError(f"{var} must be a port number (0 to 65535), got {raw!r}")
    return int(raw)


@dataclass
class Sinks:
    """The application and what its lifespan manages."""

    app: FastStream
    broker: NatsBroker
    sinks: list[_Sink]
    registry: CollectorRegistry


def build(config: SinksConfig, *, stop: asyncio.Event | None = None, sinks: list[_Sink] | None = None) -> Sinks:
    """The FastStream application of `config`'s sinks (or of `sinks`, made by the caller; a
    PostgresSink given with its pool uses that pool). `stop` (optional) ends it like a signal."""
    registry = CollectorRegistry()
    connection = startup.ConnectionLog()
    broker = _broker(config, registry, connection)
    sinks = config.sinks() if sinks is None else sinks
    # A pull subscription's deliveries come to an inbox FastStream names itself (`_INBOX.` by
    # default, not the connection's prefix): give it the prefix the sinks' permissions allow.
    prefix = config.connect_options.get("inbox_prefix")
    inbox = f"{prefix}.".encode() if prefix else None
    for sink in sinks:
        subscribe(broker, sink, inbox_prefix=inbox)
    made: list[FastStream] = []  # the lifespan's `stop` watcher ends the app made below
    spec = AsyncAPI(broker, title="memory-worker metrics sinks", version="1.0.0", schema_version="3.0.0",
                    description="Durable consumers of metrics.> on MEMORY_EVENTS: a JSON-lines file, "
                                "PostgreSQL metric_samples.")
    app = FastStream(broker, lifespan=_lifespan(config, broker, connection, sinks, registry, stop, made), specification=spec,
                     logger=None)  # structlog lines say it (metric_sink_started/stopped)
    made.append(app)
    return Sinks(app, broker, sinks, registry)


def _broker(config: SinksConfig, registry: CollectorRegistry, connection: startup.ConnectionLog) -> NatsBroker:
    broker = NatsBroker(config.nats_url.split(","), name="memory-metrics-sinks", max_reconnect_attempts=-1,
                        reconnect_time_wait=1, graceful_timeout=30.0, logger=None,
                        middlewares=[NatsPrometheusMiddleware(registry=registry, app_name="memory-metrics-sinks",
                                                              metrics_prefix="memory_sinks")],
                        error_cb=connection.error, disconnected_cb=connection.disconnected,
                        reconnected_cb=connection.reconnected)
    # The one credentials path: the same keyword arguments every other process gives
    # nats.connect() (user/password, token, nkey, creds, TLS, inbox prefix). FastStream's
    # security objects would be a second translation of the same settings.
    broker._connection_kwargs.update(config.connect_options)
    return broker


def subscribe(broker: NatsBroker, sink: _Sink, *, inbox_prefix: bytes | None = None) -> None:
    """One subscriber for `sink` on its durable, batches of up to sink.batch."""
    stream = JStream(subjects.EVENTS_STREAM, declare=False)  # the worker owns the stream and its settings

    async def handle(body: MetricBatch, msg: Annotated[NatsBatchMessage, Context("message")]) -> None:
        await sink.handle(sink.deliveries(msg.raw_message))

    broker.subscriber(METRICS_FILTER, stream=stream, durable=sink.durable, config=sink.consumer_config(),
                      pull_sub=PullSub(batch_size=sink.batch, timeout=sink.fetch_timeout, batch=True),
                      ack_policy=AckPolicy.MANUAL, inbox_prefix=inbox_prefix or nats_api.INBOX_PREFIX,
                      title=f"{sink.durable}:{sink.kind}",
                      description=f"The {sink.kind} metrics sink's durable consumer {sink.durable}.")(handle)


def _lifespan(config: SinksConfig, broker: NatsBroker, connection: startup.ConnectionLog, sinks: list[_Sink],
              registry: CollectorRegistry, stop: asyncio.Event | None,
              made: list[FastStream]) -> Callable[[], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        stopping = asyncio.Event()
        background: list[asyncio.Task[None]] = []

        def stop_now() -> None:
            stopping.set()  # ends the waits for NATS, the stream and the database, too
            made[0].exit()

        # FastStream's own signal handlers only end a started app; these also end the waits of
        # the start-up (NATS, the stream), which run before it.
        loop = asyncio.get_running_loop()
        handled = _on_signals(loop, stop_now)
        watcher = None
        if stop is not None:
            async def watch() -> None:
                await stop.wait()
                stop_now()
            watcher = asyncio.create_task(watch(), name="sinks-stop")
        opened: list[_Sink] = []
        served = False
        http: WSGIServer | None = None
        given = {id(sink): sink.pool for sink in sinks if isinstance(sink, PostgresSink)}  # the caller closes those
        try:
            http = await _start(config, broker, connection, sinks, registry, stopping, opened, background)
            served = True
            yield
        finally:
            stopping.set()
            for sig in handled:
                loop.remove_signal_handler(sig)
            tasks = [*background, *([watcher] if watcher else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if http is not None:
                http.shutdown()
                http.server_close()
            if not served:  # otherwise the app has stopped the broker (and its subscribers) already
                with contextlib.suppress(Exception):
                    await broker.stop()
            await _close(sinks, opened, given)

    return lifespan


class _Stopped(Exception):
    """Stopped before the sinks were up: nothing to run."""


def _on_signals(loop: asyncio.AbstractEventLoop, stop_now: Callable[[], None]) -> list[signal.Signals]:
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop_now)
            handled.append(sig)
    return handled


async def _start(config: SinksConfig, broker: NatsBroker, connection: startup.ConnectionLog, sinks: list[_Sink],
                 registry: CollectorRegistry, stopping: asyncio.Event, opened: list[_Sink],
                 background: list[asyncio.Task[None]]) -> WSGIServer | None:
    """Open the sinks, wait for NATS and the stream, bind the consumers; the metrics server if any."""
    for sink in sinks:
        await sink.open()  # the file lock first: a second sink on the same file fails at once
        opened.append(sink)
    if not await startup.connect(broker, stopping, connection):
        raise _Stopped("stopped before the sinks were up (NATS or MEMORY_EVENTS not there yet)")
    js = broker.config.connection_state.stream
    startup.fetch_timeouts_as_nats_timeouts(js)
    if not await startup.wait_for_events_stream(js, stopping):
        raise _Stopped("stopped before the sinks were up (NATS or MEMORY_EVENTS not there yet)")
    for sink in sinks:
        # Create or update with the full config: nats-py would bind to a drifted durable as is.
        await js.add_consumer(subjects.EVENTS_STREAM, sink.consumer_config())
    for sink in sinks:
        if isinstance(sink, PostgresSink):
            background.append(asyncio.create_task(_postgres(sink, config.database_url, stopping),
                                                  name="metric-samples"))
    http = startup.serve_metrics(config.metrics_host, config.metrics_port, registry) if config.metrics_port else None
    for sink in sinks:
        sink.log.info("metric_sink_started", stream=subjects.EVENTS_STREAM, filter=METRICS_FILTER)
    return http


async def _close(sinks: list[_Sink], opened: list[_Sink], given: dict[int, Any]) -> None:
    for sink in opened:
        await sink.close()
        sink.log.info("metric_sink_stopped")
    for sink in sinks:
        if isinstance(sink, PostgresSink) and sink.pool is not None and sink.pool is not given.get(id(sink)):
            await sink.pool.close()


async def _postgres(sink: PostgresSink, database_url: str | None, stopping: asyncio.Event) -> None:
    if sink.pool is None:
        if not database_url:
            return
        pool = await connect_pool(database_url, stopping, log)
        if pool is None:
            return
        sink.pool = pool
    await sink.prune_forever(stopping)


def __getattr__(name: str) -> Any:
    # `faststream run worker.sinks.app:app` reads the environment only when it asks for `app`,
    # so importing this module (the CLI, the tests) configures nothing.
    if name == "app":
        try:
            return build(SinksConfig.from_env()).app
        except ValueError as exc:  # SettingsError too: said in one line, as memoryctl says it, not a traceback
            raise SystemExit(f"worker.sinks.app: {exc}. `faststream run worker.sinks.app:app` is configured by "
                             "NATS_URL, DATABASE_URL (the PostgreSQL sink), SINKS_JSONL (the JSON-lines sink), "
                             "SINKS_CONSUMER_PREFIX and SINKS_METRICS_PORT; `memoryctl sinks` also finds the "
                             "servers of a running `make run`") from None
    raise AttributeError(name)
