"""A cache node: an in-process cache kept honest by `cache.invalidate.>` (docs/design.md, sections 3.1, 3.5).

Entries are keyed like the bot's caches, `(cache, key)`: `("tomori_state", workspace_id)` or
`("user", user_id)`. The node reads MEMORY_EVENTS through its own durable pull consumer
(`cache-node-<name>`, deliver NEW at first creation, explicit acks), so invalidations stored
while it was stopped are delivered when it starts again.

The node never risks serving data a committed save made stale:

- A load racing an invalidation does not store its value. Every load is a "flight" (one
  loader call shared by concurrent callers of a key); the flight is the key's generation.
  An invalidation or flush ends that generation: it detaches the flight and marks it stale,
  and a stale flight hands its value to the callers already waiting but stores nothing.
  Callers arriving after the invalidation start a new load instead of joining the old one.
- It caches only while it is *live*: started, connected, consumer in place and caught up.
  Otherwise `get_or_load` passes straight through to the loader and stores nothing.
- It flushes everything on a NATS disconnect and on reconnect, on a gap in the consumer
  sequence (a delivery it never saw), and on start when anything may have been missed while
  it was stopped (deliveries it never processed, a consumer recreated, a truncated stream).

One node name per process: two processes sharing a name would split the invalidations.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats
import structlog
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.client.cache_consumer import InvalidationConsumer
from worker.client.cache_store import CacheStore
from worker.client.invalidations import consumer_config, consumer_name
from worker.shared import jetstream

log = structlog.get_logger("cache_node")

T = TypeVar("T")

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class CacheNode(InvalidationConsumer):
    """A bounded TTL cache, LRU, invalidated through its own JetStream consumer.

    Wire the client's callbacks to `on_disconnected` / `on_reconnected` (CacheNode.connect
    does it); the node also notices a disconnect or reconnect on its own, only later.
    """

    def __init__(self, nc: NatsClient, *, name: str, max_entries: int = 10_000, ttl_seconds: float = 300.0,
                 clock: Callable[[], float] = time.monotonic, poll_seconds: float = 5.0,
                 ack_wait: float = 10.0, inactive_threshold: float | None = 24 * 3600.0,
                 catch_up_limit: int = 10_000, domain: str | None = None) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"cache node name must match {_NAME.pattern}: {name!r}")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.nc = nc
        self.name = name
        self.consumer = consumer_name(name)
        self._log = log.bind(node=name)
        self._cache = CacheStore(max_entries=max_entries, ttl_seconds=ttl_seconds, clock=clock,
                                 live=lambda: self._live, log=self._log)
        self.stats = self._cache.stats
        self._poll = poll_seconds
        self._catch_up_limit = catch_up_limit
        self._config = consumer_config(name, ack_wait=ack_wait, inactive_threshold=inactive_threshold)
        self._js = nc.jetstream(domain=domain)
        self._live = False
        self._started = False  # between start() and stop()
        self._ever_started = False
        self._sub = None  # the core subscription on the node's inbox
        self._next_subject = jetstream.next_subject(jetstream.api_prefix(domain), subjects.EVENTS_STREAM, self.consumer)
        self._outstanding = 0  # deliveries the current pull request may still bring
        self._task: asyncio.Task[None] | None = None
        self._applying = False
        self._stopping = False
        self._resync = False  # set by a reconnect: re-check the consumer before going live again
        self._last_cseq: int | None = None  # consumer sequence of the last delivery seen
        self._reconnects_seen = 0
        self._owns_nc = False

    # -- construction with a connection of its own ------------------------------------------

    @classmethod
    async def connect(cls, nats_url: str | list[str], *, name: str, connect_options: dict[str, Any] | None = None,
                      **node_options: Any) -> CacheNode:
        """A node on a connection of its own, with the disconnect/reconnect callbacks wired.

        `connect_options` go to nats.connect (defaults: reconnect forever, every second).
        """
        node: CacheNode | None = None

        async def disconnected() -> None:
            if node is not None:
                await node.on_disconnected()

        async def reconnected() -> None:
            if node is not None:
                await node.on_reconnected()

        async def error(exc: Exception) -> None:
            log.warning("cache_node_nats_error", node=name, error=repr(exc))

        options: dict[str, Any] = {"name": f"cache-node-{name}", "max_reconnect_attempts": -1,
                                   "reconnect_time_wait": 1, "error_cb": error, **(connect_options or {})}
        nc = await nats.connect(nats_url, disconnected_cb=disconnected, reconnected_cb=reconnected, **options)
        node = cls(nc, name=name, **node_options)
        node._owns_nc = True
        return node

    async def close(self) -> None:
        """stop(), and close the connection when the node opened it (CacheNode.connect)."""
        await self.stop()
        if self._owns_nc and not self.nc.is_closed:
            await self.nc.close()

    # -- the cache ---------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """True while the node caches: started, connected, consumer in place, caught up."""
        return self._live

    def __len__(self) -> int:
        return len(self._cache)

    def contains(self, cache: str, key: str) -> bool:
        """Whether an unexpired value is held (no stats, no LRU touch)."""
        return self._cache.contains(cache, key)

    async def get_or_load(self, cache: str, key: str, loader: Callable[[], Awaitable[T]]) -> T:
        """The cached value, or the loader's (one loader call for concurrent misses); stored
        only while the node is live."""
        return await self._cache.get_or_load(cache, key, loader)

    def invalidate(self, cache: str, key: str, *, reason: str = "manual", **fields: Any) -> bool:
        """Drop one key, and keep a load already in flight for it from storing. True if held."""
        return self._cache.invalidate(cache, key, reason=reason, **fields)

    def flush(self, reason: str = "manual", **fields: Any) -> int:
        """Drop everything, and keep every load in flight from storing. Returns entries dropped."""
        return self._cache.flush(reason, **fields)

    # -- connection events -------------------------------------------------------------------

    async def on_disconnected(self) -> None:
        """The client lost its server: invalidations can no longer arrive. Flush, stop caching.

        A stopped node keeps its entries: start() checks what it missed either way.
        """
        if self._started:
            self._go_offline("nats_disconnected")

    async def on_reconnected(self) -> None:
        """Back on a server: flush again (anything in flight meanwhile), re-check the consumer."""
        self._resync = True  # start() clears it first: a reconnect during start() still counts
        if self._started:
            self._go_offline("nats_reconnected")

    def _go_offline(self, reason: str) -> None:
        was_live = self._live
        self._live = False
        if self._cache.holds_anything() or was_live:
            self.flush(reason)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Create or update the consumer, apply what was missed while stopped, start caching.

        Raises nats.js.errors.NotFoundError when MEMORY_EVENTS does not exist yet.
        """
        if self._started:
            return
        self._stopping = False
        self._resync = False
        await self._sync(first=True)
        self._started = True
        self._ever_started = True
        self._task = asyncio.create_task(self._run(), name=f"cache-node-{self.name}")
        self._log.info("cache_node_started", consumer=self.consumer, entries=len(self._cache))

    async def stop(self, *, delete_consumer: bool = False) -> None:
        """Stop reading invalidations and stop caching; entries are kept for the next start().

        While stopped, get_or_load passes through to the loader. `delete_consumer` also
        removes the durable consumer (the node is gone for good).
        """
        self._live = False
        if self._started:
            self._started = False
            self._stopping = True
            task, self._task = self._task, None
            if task is not None:
                if not self._applying:
                    # Waiting on the server, sleeping or resyncing: nothing half done.
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self._unsubscribe()
            if self.nc.is_connected:
                # Acks sent, and the server has dropped our interest (so any pull request
                # still waiting there delivers nothing more to us).
                with contextlib.suppress(Exception):
                    await self.nc.flush(timeout=2)
            self._log.info("cache_node_stopped", entries=len(self._cache), stats=self.stats.as_dict())
        if delete_consumer:
            with contextlib.suppress(NotFoundError):
                await self._js.delete_consumer(subjects.EVENTS_STREAM, self.consumer)
            self._last_cseq = None

    async def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


async def run_cache_node(nats_url: str, name: str, stop: asyncio.Event, **node_options: Any) -> CacheNode:
    """`memoryctl cache-node`: a node that logs every invalidation and flush until `stop` is set.

    Waits for MEMORY_EVENTS when the worker has not provisioned it yet. Returns the stopped
    node (its stats) for the caller to report.
    """
    servers = [u.strip() for u in nats_url.split(",") if u.strip()]
    node = await CacheNode.connect(servers, name=name, **node_options)
    try:
        while not stop.is_set():
            try:
                await node.start()
                break
            except NotFoundError:
                log.info("cache_node_waiting_for_stream", node=name, stream=subjects.EVENTS_STREAM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)
        if not stop.is_set():
            log.info("cache_node_ready", node=name, consumer=node.consumer, url=nats_url)
            await stop.wait()
    finally:
        await node.close()
    return node
