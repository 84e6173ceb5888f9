"""The worker's one NATS connection: how it reconnects, how it notices a dead node, and what
it says and does when the connection comes and goes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import nats
import structlog
from nats.aio.client import Client as NatsClient
from nats.errors import ConnectionClosedError

from worker.shared.settings import Settings

log = structlog.get_logger("worker")

# A connection to a node cut off by a partition stays open but dead; nats-py notices only
# when pings go unanswered (by default every 2 minutes, two missed). Measured in tests/faults
# (partition-leader-with-worker): with the default, a worker whose node was cut from it
# served nothing for the whole 30 s partition; pinging every 3 s it reconnects to another
# node within about 10 s.
PING_INTERVAL_S = 3
MAX_OUTSTANDING_PINGS = 2


class NatsConnectionClosed(RuntimeError):
    """The NATS client closed its connection for good (the server closed it after a protocol
    error, or refused the credentials again): reconnecting cannot bring it back, so the worker
    stops and exits non-zero, and its supervisor starts it with a new connection."""


async def connect(nats_url: str, settings: Settings, *, stop: asyncio.Event, closed: asyncio.Event) -> NatsClient:
    """Connected, reconnecting for ever; a connection closed for good sets `closed` and `stop`.
    nats-py directly, one connection and one credentials path (NatsAuth.connect_options) for
    every process: FastStream's subscribers cannot express the pinned priority groups and cost
    several times nats-py's CPU per message (README, "Libraries")."""
    return await nats.connect(
        nats_url.split(","),
        max_reconnect_attempts=-1,  # keep trying: a restarted NATS must not need a worker restart
        reconnect_time_wait=1,
        connect_timeout=5,
        ping_interval=PING_INTERVAL_S,
        max_outstanding_pings=MAX_OUTSTANDING_PINGS,
        name="memory-worker",
        disconnected_cb=_disconnected(stop),
        closed_cb=_closed(stop, closed),
        reconnected_cb=_reconnected,
        error_cb=_error,
        **settings.nats_auth.connect_options(),
    )


async def drain(nc: NatsClient) -> None:
    with contextlib.suppress(ConnectionClosedError):  # closed already: nothing left to drain
        await nc.drain()


def _disconnected(stop: asyncio.Event) -> Callable[[], Awaitable[None]]:
    async def disconnected() -> None:
        if not stop.is_set():  # a drain at shutdown disconnects too: nothing to warn about
            log.warning("nats_disconnected", note="reconnecting; commands wait in JetStream meanwhile")

    return disconnected


def _closed(stop: asyncio.Event, closed: asyncio.Event) -> Callable[[], Awaitable[None]]:
    async def on_closed() -> None:
        if stop.is_set():  # the worker's own close at shutdown
            return
        closed.set()
        log.error("nats_connection_closed", note="the client will not reconnect: stopping, to exit non-zero "
                  "and be restarted with a new connection")
        stop.set()

    return on_closed


async def _reconnected() -> None:
    log.info("nats_reconnected")


async def _error(exc: Exception) -> None:
    log.warning("nats_error", error=repr(exc))
