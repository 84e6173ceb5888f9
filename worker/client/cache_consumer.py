"""The cache node's consumer of `cache.invalidate.>`: checking on start what it may have
missed, the pull loop with its hand-written pull requests, applying each invalidation to
the store. A base of CacheNode (worker/client/cache_node.py), which owns the state and the
lifecycle; the store is worker/client/cache_store.py."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.client.invalidations import parse_invalidation
from worker.shared import jetstream
from worker.shared.jetstream import pull_status

if TYPE_CHECKING:
    from worker.client.cache_store import CacheStats, CacheStore

log = structlog.get_logger("cache_node")

_BATCH = 256  # deliveries per pull request


class InvalidationConsumer:
    """What CacheNode does with its consumer; the attributes are CacheNode's, declared here
    so the type checker holds the two to the same names and types."""

    nc: NatsClient
    consumer: str
    stats: CacheStats
    _js: JetStreamContext
    _config: ConsumerConfig
    _cache: CacheStore
    _log: Any  # structlog's bound logger
    _poll: float
    _catch_up_limit: int
    _next_subject: str
    _live: bool
    _ever_started: bool
    _stopping: bool
    _sub: Subscription | None
    _outstanding: int
    _last_cseq: int | None
    _reconnects_seen: int

    if TYPE_CHECKING:
        def flush(self, reason: str = "manual", **fields: Any) -> int: ...
        def invalidate(self, cache: str, key: str, *, reason: str = "manual", **fields: Any) -> bool: ...
        def _go_offline(self, reason: str) -> None: ...
        async def _unsubscribe(self) -> None: ...

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
        if len(self._cache) and info.delivered is not None:
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
                    msg = await self._inbox().next_msg(timeout=max(self._poll, 2.0))
                except TimeoutError:
                    break
                status = pull_status(msg)
                if status == jetstream.HEARTBEAT:
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

    def _inbox(self) -> Subscription:
        if self._sub is None:  # _sync subscribes before the loop reads
            raise RuntimeError("the node's inbox is not subscribed")
        return self._sub

    async def _request(self, batch: int, *, expires: float | None = None, no_wait: bool = False) -> None:
        """A pull request to the node's consumer, delivered to the node's inbox."""
        await self.nc.publish(self._next_subject, jetstream.pull_request(batch, expires_s=expires, no_wait=no_wait),
                              reply=self._inbox().subject)

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
                if not await self._connected():
                    continue
                if self._resync or self._sub is None:
                    self._resync = False
                    await self._sync(first=False)
                if self._outstanding <= 0 or loop.time() >= deadline:
                    await self._request(_BATCH, expires=self._poll)
                    self._outstanding = _BATCH
                    deadline = loop.time() + self._poll + 1.0
                try:
                    # Short slices: the connection checks above run at least every 0.25 s.
                    msg = await self._inbox().next_msg(timeout=min(max(deadline - loop.time(), 0.01), 0.25))
                except TimeoutError:
                    if loop.time() >= deadline:
                        # No answer at all (a request lost in a reconnect?): ask again.
                        self._outstanding = 0
                        await self._check_consumer()
                    continue
                status = pull_status(msg)
                if status:  # about the request (heartbeat, expired ...), not a delivery
                    await self._on_status(status, msg)
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

    async def _connected(self) -> bool:
        """Whether to pull now: connected, and any reconnect nobody told the node about noticed."""
        if not self.nc.is_connected:
            if self._live or len(self._cache):
                self._go_offline("nats_disconnected_detected")
            await asyncio.sleep(0.1)
            return False
        reconnects = self.nc.stats.get("reconnects", 0)
        if reconnects != self._reconnects_seen:
            # A reconnect nobody told us about (callbacks not wired).
            self._reconnects_seen = reconnects
            self._go_offline("nats_reconnected_detected")
            self._resync = True
        return True

    async def _on_status(self, status: str, msg: Msg) -> None:
        if status == jetstream.HEARTBEAT:  # idle heartbeat
            return
        # 408 expired, 404 nothing, 409 consumer deleted / limits: the request is over.
        self._outstanding = 0
        if status == "409" and "deleted" in (msg.headers or {}).get("Description", "").lower():
            self._go_offline("consumer_deleted")
            self._resync = True
        elif status == jetstream.REQUEST_TIMEOUT:
            await self._check_consumer()

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
        if not jetstream.is_delivery_of(msg, subjects.EVENTS_STREAM, self.consumer):
            # Not delivered by the node's consumer: neither applied nor acknowledged (an ack is
            # a publish to whatever reply subject the message carries).
            self._log.warning("cache_node_foreign_message", subject=msg.subject[:256], reply=(msg.reply or "")[:256])
            return
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
