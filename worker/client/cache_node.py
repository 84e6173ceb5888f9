"""A cache node: an in-process cache kept honest by `cache.invalidate.>` (DESIGN.md 3.1, 3.5).

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
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import msgspec
import nats
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.events import CacheInvalidate

log = structlog.get_logger("cache_node")

T = TypeVar("T")
Key = tuple[str, str]

INVALIDATE_FILTER = "cache.invalidate.>"
CONSUMER_PREFIX = "cache-node-"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BATCH = 256  # deliveries per pull request


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0  # every get_or_load that did not return a cached value
    loads: int = 0  # loader calls (single-flight: concurrent misses share one)
    invalidations: int = 0  # invalidations applied (events and direct calls)
    flushes: int = 0
    evictions: int = 0  # dropped by the size bound (least recently used first)
    expirations: int = 0  # dropped by the TTL
    bypasses: int = 0  # misses served while not live: loaded, not stored
    gaps: int = 0  # consumer sequence gaps seen

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class _Entry:
    __slots__ = ("value", "expires_at")

    def __init__(self, value: Any, expires_at: float) -> None:
        self.value = value
        self.expires_at = expires_at


class _Flight:
    """One loader call shared by concurrent callers of one key: the key's current generation.

    invalidate() and flush() end the generation: the flight is detached from the key and
    marked stale, and a stale flight stores nothing. A flight started while the node is not
    live is stale from the start.
    """

    __slots__ = ("task", "stale")

    def __init__(self, stale: bool) -> None:
        self.task: asyncio.Future | None = None
        self.stale = stale


def consumer_name(node_name: str) -> str:
    return f"{CONSUMER_PREFIX}{node_name}"


def consumer_config(node_name: str, *, ack_wait: float = 10.0,
                    inactive_threshold: float | None = 24 * 3600.0) -> ConsumerConfig:
    name = consumer_name(node_name)
    return ConsumerConfig(
        name=name,
        durable_name=name,
        filter_subject=INVALIDATE_FILTER,
        # Only applies when the consumer is first created: a node that comes back later
        # resumes where it stopped, so it is delivered what it missed.
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.EXPLICIT,
        # Applying an invalidation is instant; a short ack wait bounds how long a lost
        # delivery stays unapplied before the server redelivers it.
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=10_000,
        # A node that never comes back does not keep its consumer forever. One that comes
        # back after this finds its consumer recreated and flushes.
        inactive_threshold=inactive_threshold,
    )


def parse_invalidation(msg_subject: str, data: bytes) -> tuple[set[Key], dict[str, Any]]:
    """The keys one `cache.invalidate.<cache>.<key>` message names, and fields for the log.

    The subject and the payload both name the key; should they disagree (or one be
    unreadable), both are invalidated. An empty set means nothing readable: flush.
    """
    keys: set[Key] = set()
    fields: dict[str, Any] = {}
    parts = msg_subject.split(".")
    if len(parts) == 4 and parts[0] == "cache" and parts[1] == "invalidate":
        with contextlib.suppress(ValueError):
            keys.add((parts[2], subjects.decode_token(parts[3])))
    try:
        event = msgspec.json.decode(data, type=CacheInvalidate)
    except (msgspec.DecodeError, msgspec.ValidationError):
        fields["payload"] = "unreadable"
    else:
        keys.add((event.cache, event.key))
        fields.update(event_id=event.event_id, command_id=event.command_id, reason=event.reason)
    return keys, fields


class CacheNode:
    """A bounded TTL cache, LRU, invalidated through its own JetStream consumer.

    Wire the client's callbacks to `on_disconnected` / `on_reconnected` (CacheNode.connect
    does it); the node also notices a disconnect or reconnect on its own, only later.
    """

    def __init__(self, nc: NatsClient, *, name: str, max_entries: int = 10_000, ttl_seconds: float = 300.0,
                 clock: Callable[[], float] = time.monotonic, poll_seconds: float = 5.0,
                 ack_wait: float = 10.0, inactive_threshold: float | None = 24 * 3600.0,
                 catch_up_limit: int = 10_000) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"cache node name must match {_NAME.pattern}: {name!r}")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.nc = nc
        self.name = name
        self.consumer = consumer_name(name)
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.stats = CacheStats()
        self._clock = clock
        self._poll = poll_seconds
        self._catch_up_limit = catch_up_limit
        self._config = consumer_config(name, ack_wait=ack_wait, inactive_threshold=inactive_threshold)
        self._js = nc.jetstream()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._flights: dict[Key, _Flight] = {}
        self._live = False
        self._started = False  # between start() and stop()
        self._ever_started = False
        self._sub = None  # the core subscription on the node's inbox
        self._next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{subjects.EVENTS_STREAM}.{self.consumer}"
        self._outstanding = 0  # deliveries the current pull request may still bring
        self._task: asyncio.Task | None = None
        self._applying = False
        self._stopping = False
        self._resync = False  # set by a reconnect: re-check the consumer before going live again
        self._last_cseq: int | None = None  # consumer sequence of the last delivery seen
        self._reconnects_seen = 0
        self._owns_nc = False
        self._log = log.bind(node=name)

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
        return len(self._entries)

    def contains(self, cache: str, key: str) -> bool:
        """Whether an unexpired value is held (no stats, no LRU touch)."""
        entry = self._entries.get((cache, key))
        return entry is not None and entry.expires_at > self._clock()

    async def get_or_load(self, cache: str, key: str, loader: Callable[[], Awaitable[T]]) -> T:
        k = (cache, key)
        if self._live:
            entry = self._entries.get(k)
            if entry is not None:
                if entry.expires_at > self._clock():
                    self._entries.move_to_end(k)
                    self.stats.hits += 1
                    return entry.value
                del self._entries[k]
                self.stats.expirations += 1
        self.stats.misses += 1
        if not self._live:
            self.stats.bypasses += 1
        flight = self._flights.get(k)
        if flight is None:
            flight = _Flight(stale=not self._live)
            self._flights[k] = flight
            flight.task = asyncio.ensure_future(self._load(k, flight, loader))
            flight.task.add_done_callback(_consume_exception)
        # Shielded: a caller giving up does not cancel the load the others wait for.
        return await asyncio.shield(flight.task)

    async def _load(self, k: Key, flight: _Flight, loader: Callable[[], Awaitable[T]]) -> T:
        self.stats.loads += 1
        loaded_at = self._clock()  # the TTL counts from before the read: conservative
        try:
            value = await loader()
        finally:
            if self._flights.get(k) is flight:
                del self._flights[k]
        if not flight.stale and self._live:
            self._store(k, value, loaded_at)
        return value

    def _store(self, k: Key, value: Any, loaded_at: float) -> None:
        self._entries[k] = _Entry(value, loaded_at + self.ttl_seconds)
        self._entries.move_to_end(k)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.stats.evictions += 1

    def invalidate(self, cache: str, key: str, *, reason: str = "manual", **fields: Any) -> bool:
        """Drop one key, and keep a load already in flight for it from storing. True if held."""
        k = (cache, key)
        held = self._entries.pop(k, None) is not None
        flight = self._flights.pop(k, None)
        if flight is not None:
            flight.stale = True
        self.stats.invalidations += 1
        self._log.info("cache_invalidated", cache=cache, key=key, reason=reason, held=held,
                       load_in_flight=flight is not None, **fields)
        return held

    def flush(self, reason: str = "manual", **fields: Any) -> int:
        """Drop everything, and keep every load in flight from storing. Returns entries dropped."""
        dropped = len(self._entries)
        self._entries.clear()
        in_flight = len(self._flights)
        for flight in self._flights.values():
            flight.stale = True
        self._flights.clear()
        self.stats.flushes += 1
        level = self._log.info if reason == "manual" else self._log.warning
        level("cache_flushed", reason=reason, entries=dropped, loads_in_flight=in_flight, **fields)
        return dropped

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
        if self._entries or self._flights or was_live:
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
        self._log.info("cache_node_started", consumer=self.consumer, entries=len(self._entries))

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
            self._log.info("cache_node_stopped", entries=len(self._entries), stats=self.stats.as_dict())
        if delete_consumer:
            with contextlib.suppress(NotFoundError):
                await self._js.delete_consumer(subjects.EVENTS_STREAM, self.consumer)
            self._last_cseq = None

    async def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _sync(self, *, first: bool) -> None:
        """(Re)create the consumer, flush if anything may have been missed, catch up, go live."""
        self._live = False
        self._reconnects_seen = self.nc.stats.get("reconnects", 0)
        try:
            before = await self._js.consumer_info(subjects.EVENTS_STREAM, self.consumer)
        except NotFoundError:
            before = None
        info = await self._js.add_consumer(subjects.EVENTS_STREAM, self._config)
        reasons: list[str] = []
        if before is None and self._ever_started:
            reasons.append("consumer_recreated")
        if info.num_ack_pending:
            # Delivered while we were not reading (e.g. to a pull request of the stopped node).
            reasons.append("unacknowledged_deliveries")
        delivered = info.delivered.consumer_seq if info.delivered else 0
        if self._last_cseq is not None and before is not None and delivered != self._last_cseq:
            reasons.append("deliveries_not_seen")
        if self._entries and info.delivered is not None:
            # Messages removed (aged out, purged) before they were delivered to us.
            stream = await self._js.stream_info(subjects.EVENTS_STREAM)
            if stream.state.first_seq > info.delivered.stream_seq + 1:
                reasons.append("stream_truncated")
        if reasons:
            self.flush(",".join(reasons), consumer_seq=delivered, last_seen=self._last_cseq)
        self._last_cseq = delivered
        await self._unsubscribe()
        self._sub = await self.nc.subscribe(self.nc.new_inbox())
        self._outstanding = 0
        # Catch up on what the consumer holds for us before serving anything from the cache.
        pending = info.num_pending or 0
        applied = 0
        if pending > self._catch_up_limit:
            # Cheaper to start cold; the backlog still arrives (and invalidates) afterwards.
            self.flush("backlog_too_large", pending=pending)
        elif pending:
            # no_wait: the server sends what it has, then a 404/408 status ends the request.
            await self._request(pending, no_wait=True)
            while applied < pending and not self._stopping:
                try:
                    msg = await self._sub.next_msg(timeout=max(self._poll, 2.0))
                except TimeoutError:
                    break
                status = _status(msg)
                if status == "100":
                    continue
                if status:
                    break
                applied += 1
                await self._apply(msg)
            self._log.info("cache_node_caught_up", pending=pending, applied=applied)
            if applied < pending:
                # Nothing may be served that a missing invalidation would have dropped.
                self.flush("catch_up_incomplete", pending=pending, applied=applied)
        if self.nc.stats.get("reconnects", 0) != self._reconnects_seen:
            self._resync = True
        # A reconnect while we synced asks for another sync before caching.
        self._live = self.nc.is_connected and not self._resync
        if not first:
            self._log.info("cache_node_resynced", consumer_seq=self._last_cseq, live=self._live)

    async def _request(self, batch: int, *, expires: float | None = None, no_wait: bool = False) -> None:
        """A pull request to the node's consumer, delivered to the node's inbox."""
        req: dict[str, Any] = {"batch": batch}
        if expires:
            req["expires"] = int(expires * 1_000_000_000)
        if no_wait:
            req["no_wait"] = True
        await self.nc.publish(self._next_subject, msgspec.json.encode(req), reply=self._sub.subject)

    async def _run(self) -> None:
        """Continuous pull: one lingering request at a time, each delivery applied on arrival.

        (nats-py's fetch(batch>1) holds the first message until the batch fills or the
        request expires: an invalidation would wait up to the poll interval.)
        """
        loop = asyncio.get_running_loop()
        failures = 0
        deadline = 0.0
        while not self._stopping:
            try:
                if not self.nc.is_connected:
                    if self._live or self._entries:
                        self._go_offline("nats_disconnected_detected")
                    await asyncio.sleep(0.1)
                    continue
                reconnects = self.nc.stats.get("reconnects", 0)
                if reconnects != self._reconnects_seen:
                    # A reconnect nobody told us about (callbacks not wired).
                    self._reconnects_seen = reconnects
                    self._go_offline("nats_reconnected_detected")
                    self._resync = True
                if self._resync or self._sub is None:
                    self._resync = False
                    await self._sync(first=False)
                if self._outstanding <= 0 or loop.time() >= deadline:
                    await self._request(_BATCH, expires=self._poll)
                    self._outstanding = _BATCH
                    deadline = loop.time() + self._poll + 1.0
                try:
                    # Short slices: the connection checks above run at least every 0.25 s.
                    msg = await self._sub.next_msg(timeout=min(max(deadline - loop.time(), 0.01), 0.25))
                except TimeoutError:
                    if loop.time() >= deadline:
                        # No answer at all (a request lost in a reconnect?): ask again.
                        self._outstanding = 0
                        await self._check_consumer()
                    continue
                status = _status(msg)
                if status == "100":  # idle heartbeat
                    continue
                if status:
                    # 408 expired, 404 nothing, 409 consumer deleted / limits: the request is over.
                    self._outstanding = 0
                    if status == "409" and "deleted" in (msg.headers or {}).get("Description", "").lower():
                        self._go_offline("consumer_deleted")
                        self._resync = True
                    elif status == "408":
                        await self._check_consumer()
                    continue
                self._outstanding -= 1
                await self._apply(msg)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # The consumer or stream went away, or the server is restarting: stop caching,
                # come back through a full resync.
                failures += 1
                self._go_offline("consumer_error")
                self._resync = True
                self._log.warning("cache_node_consumer_error", error=repr(exc), attempt=failures)
                await asyncio.sleep(min(0.2 * failures, 5.0))

    async def _check_consumer(self) -> None:
        """While idle: the consumer must still exist (deleted, or expired on the server)."""
        if not self.nc.is_connected:
            return
        try:
            await self._js.consumer_info(subjects.EVENTS_STREAM, self.consumer, timeout=2.0)
        except NotFoundError:
            self._go_offline("consumer_missing")
            self._resync = True

    async def _apply(self, msg: Msg) -> None:
        """Apply one delivery, then ack it. stop() lets this finish rather than cancel it
        between the apply and the ack."""
        self._applying = True
        try:
            self._apply_one(msg)
            with contextlib.suppress(Exception):
                await msg.ack()
        finally:
            self._applying = False

    def _apply_one(self, msg: Msg) -> None:
        md = msg.metadata
        cseq = md.sequence.consumer
        last = self._last_cseq
        if last is not None and cseq > last + 1 and md.num_delivered <= 1:
            # A first delivery skipped ahead: the server delivered something we never saw.
            self.stats.gaps += 1
            self.flush("consumer_sequence_gap", expected=last + 1, got=cseq)
        if last is None or cseq > last:
            self._last_cseq = cseq
        keys, fields = parse_invalidation(msg.subject, msg.data)
        if not keys:
            self.flush("unreadable_invalidation", subject=msg.subject)
            return
        fields.setdefault("reason", "event")
        for cache, key in sorted(keys):
            self.invalidate(cache, key, stream_seq=md.sequence.stream, deliveries=md.num_delivered, **fields)


def _status(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Status") if msg.headers else None


def _consume_exception(task: asyncio.Future) -> None:
    # Every waiter may have given up; the load's failure is still theirs, not the loop's.
    if not task.cancelled():
        task.exception()


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
