"""What the sinks' lifespan (worker/sinks/app.py) waits for and works around: the NATS
connection (its errors logged once), the stream the worker owns, a nats-py/FastStream timeout
mismatch, the /metrics endpoint."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from wsgiref.simple_server import WSGIServer

import nats.errors
import structlog
from faststream.nats import NatsBroker
from nats.js.errors import NotFoundError
from prometheus_client import CollectorRegistry

from contracts import subjects
from worker.sinks.postgres import _sleep_or_stop

log = structlog.get_logger("memory.sinks")


def fetch_timeouts_as_nats_timeouts(js: Any) -> None:
    """nats-py 2.16's fetch() can end a batch's wait with the builtin TimeoutError, where
    FastStream 0.7.8's batch loop catches only nats.errors.TimeoutError: its task then dies with
    the batch it had collected (redelivered only after ack_wait) and is restarted. Every pull
    subscription made on `js` (the broker's, before its subscribers start) gets a fetch that
    raises nats-py's own timeout instead, a subclass of the builtin one."""
    pull_subscribe = js.pull_subscribe

    async def subscribe(*args: Any, **kwargs: Any) -> Any:
        subscription = await pull_subscribe(*args, **kwargs)
        fetch = subscription.fetch

        async def fetch_or_nats_timeout(*a: Any, **kw: Any) -> Any:
            try:
                return await fetch(*a, **kw)
            except TimeoutError as exc:
                if isinstance(exc, nats.errors.TimeoutError):
                    raise
                raise nats.errors.TimeoutError from exc

        subscription.fetch = fetch_or_nats_timeout
        return subscription

    js.pull_subscribe = subscribe


async def connect(broker: NatsBroker, stopping: asyncio.Event, connection: ConnectionLog) -> bool:
    """Connect, waiting out a NATS that is not there yet (nats-py retries itself, and the error
    callback, `connection`'s, logs once); False when stopped first."""
    connect = asyncio.create_task(broker.connect())
    stopped = asyncio.create_task(stopping.wait())
    await asyncio.wait({connect, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if connect.done():
        connect.result()  # raises what nats-py gave up with
        connection.connected()
        return True
    connect.cancel()
    with contextlib.suppress(BaseException):
        await connect
    return False


async def wait_for_events_stream(js: Any, stopping: asyncio.Event) -> bool:
    """Wait until MEMORY_EVENTS exists (the sinks may start before the worker, which owns the
    stream and its settings); False when stopped first."""
    waiting = False
    while not stopping.is_set():
        try:
            await js.stream_info(subjects.EVENTS_STREAM)
            return True
        except NotFoundError:
            if not waiting:
                log.info("metric_sinks_waiting_for_stream", stream=subjects.EVENTS_STREAM)
                waiting = True
        await _sleep_or_stop(stopping, 1.0)
    return False


def serve_metrics(host: str, port: int, registry: CollectorRegistry) -> WSGIServer:
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host, registry=registry)
    log.info("metric_sinks_metrics_serving", host=host, port=server.server_port)
    return server


class ConnectionLog:
    """What the sinks log of their NATS connection, as nats-py's callbacks: an error once until
    the next (re)connect, however often nats-py retries meanwhile. One per broker: state kept for
    the whole process would silence the errors of a later application in it."""

    def __init__(self) -> None:
        self.failing = False

    async def error(self, exc: Exception) -> None:
        if not self.failing:
            log.warning("metric_sinks_nats_error", error=repr(exc))
            self.failing = True

    async def disconnected(self) -> None:
        log.info("metric_sinks_nats_disconnected")  # at every stop too (the drain): not a warning

    async def reconnected(self) -> None:
        self.failing = False
        log.info("metric_sinks_nats_reconnected")

    def connected(self) -> None:
        if self.failing:
            log.info("metric_sinks_nats_connected")
            self.failing = False
