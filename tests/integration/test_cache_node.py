"""The cache node (worker/client/cache_node.py) on a real nats-server: caching, TTL, bound,
single-flight, invalidation events from MEMORY_EVENTS, races, gaps, disconnects, restarts."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import msgspec
import nats
import pytest
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, DeliverPolicy

from contracts import subjects
from contracts.events import CacheInvalidate
from tests.support.waiting import wait_until
from worker.client.cache_node import CacheNode, consumer_name
from worker.consuming.administration import streams
from worker.local.embedded import NatsServer

from ..conftest import unique


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingNode(CacheNode):
    """Remembers which keys it invalidated, so a test can wait for exactly its own event."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.invalidated: list[tuple[str, str]] = []

    def invalidate(self, cache, key, **kw):
        self.invalidated.append((cache, key))
        return super().invalidate(cache, key, **kw)


async def publish_invalidation(js, cache: str, key: str, *, data: bytes | None = None) -> None:
    event_id = f"test:{uuid.uuid4().hex}"
    payload = data if data is not None else msgspec.json.encode(CacheInvalidate(
        event_id=event_id, command_id=f"cmd-{uuid.uuid4().hex}", occurred_at=datetime.now(UTC).isoformat(),
        cache=cache, key=key, reason="memory_saved"))
    await js.publish(subjects.invalidate_subject(cache, key), payload, headers={"Nats-Msg-Id": event_id},
                     stream=subjects.EVENTS_STREAM)


class Loader:
    """A loader returning `value`, counting calls; optionally held until released."""

    def __init__(self, value, *, hold: bool = False) -> None:
        self.value = value
        self.calls = 0
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        if not hold:
            self.release.set()

    async def __call__(self):
        self.calls += 1
        self.started.set()
        await self.release.wait()
        return self.value


@pytest.fixture
async def js(nc):
    jsctx = nc.jetstream()
    await streams.ensure_stream(jsctx, streams.events_stream())
    return jsctx


@pytest.fixture
async def make_node(nc, js):
    nodes: list[CacheNode] = []

    async def make(cls=CacheNode, client=None, **kwargs) -> CacheNode:
        kwargs.setdefault("poll_seconds", 0.5)
        node = cls(client or nc, name=unique("it-"), **kwargs)
        await node.start()
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        await node.stop(delete_consumer=True)


async def test_get_or_load_caches_until_ttl_expires(make_node):
    clock = FakeClock()
    node = await make_node(ttl_seconds=30.0, clock=clock)
    ws = unique()
    load = Loader(["likes tea"])

    assert await node.get_or_load("tomori_state", ws, load) == ["likes tea"]
    assert await node.get_or_load("tomori_state", ws, load) == ["likes tea"]
    assert load.calls == 1
    assert (node.stats.hits, node.stats.misses) == (1, 1)

    clock.now += 29.9
    await node.get_or_load("tomori_state", ws, load)
    assert load.calls == 1
    clock.now += 0.2  # 30.1 s after the load started
    assert not node.contains("tomori_state", ws)
    await node.get_or_load("tomori_state", ws, load)
    assert load.calls == 2
    assert node.stats.expirations == 1


async def test_the_bound_evicts_the_least_recently_used(make_node):
    node = await make_node(max_entries=3)
    loads = {k: Loader(k) for k in "abcd"}
    for k in "abc":
        await node.get_or_load("user", k, loads[k])
    await node.get_or_load("user", "a", loads["a"])  # a is now the most recently used
    await node.get_or_load("user", "d", loads["d"])

    assert len(node) == 3
    assert [node.contains("user", k) for k in "abcd"] == [True, False, True, True]
    assert node.stats.evictions == 1
    assert node.stats.invalidations == 0


async def test_concurrent_loads_of_a_key_share_one_loader_call(make_node):
    node = await make_node()
    load = Loader({"n": 1}, hold=True)
    other = Loader("other")
    callers = [asyncio.create_task(node.get_or_load("tomori_state", "ws", load)) for _ in range(20)]
    await load.started.wait()
    assert await node.get_or_load("tomori_state", "other-ws", other) == "other"  # other keys don't wait
    load.release.set()

    assert await asyncio.gather(*callers) == [{"n": 1}] * 20
    assert load.calls == 1
    assert node.stats.loads == 2


async def test_a_failed_load_is_shared_and_not_cached(make_node):
    node = await make_node()
    calls = 0

    async def failing():
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        raise RuntimeError("db down")

    results = await asyncio.gather(*(node.get_or_load("user", "u", failing) for _ in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results) and calls == 1
    assert not node.contains("user", "u")
    assert await node.get_or_load("user", "u", Loader("ok")) == "ok"


async def test_an_invalidation_event_evicts_exactly_that_key(make_node, js):
    node = await make_node(cls=RecordingNode)
    ws, other_ws = unique(), unique()
    odd_key = f"{unique()}.with dots/and spaces"  # percent-encoded in the subject
    for cache, key in [("tomori_state", ws), ("tomori_state", other_ws), ("user", ws), ("user", odd_key)]:
        await node.get_or_load(cache, key, Loader(f"{cache}:{key}"))

    await publish_invalidation(js, "tomori_state", ws)
    await publish_invalidation(js, "user", odd_key)
    await wait_until(lambda: ("user", odd_key) in node.invalidated)

    assert not node.contains("tomori_state", ws)
    assert not node.contains("user", odd_key)
    assert node.contains("tomori_state", other_ws)
    assert node.contains("user", ws)  # same id, other cache
    assert node.stats.flushes == 0
    load = Loader("fresh")
    assert await node.get_or_load("tomori_state", ws, load) == "fresh" and load.calls == 1


async def test_an_unreadable_payload_still_invalidates_the_subject_key(make_node, js):
    node = await make_node(cls=RecordingNode)
    ws, other = unique(), unique()
    await node.get_or_load("tomori_state", ws, Loader(1))
    await node.get_or_load("tomori_state", other, Loader(2))

    await publish_invalidation(js, "tomori_state", ws, data=b"not json")
    await wait_until(lambda: ("tomori_state", ws) in node.invalidated)

    assert not node.contains("tomori_state", ws)
    assert node.contains("tomori_state", other)


async def test_a_message_its_consumer_did_not_deliver_is_neither_applied_nor_acknowledged(make_node, js, nc):
    """Acknowledging is publishing to the reply subject a message carries: a node answers only
    its consumer's deliveries (contracts/subjects.py, is_ack_subject), whatever else reaches its
    inbox (issue 35)."""
    node = await make_node(cls=RecordingNode)
    ws = unique()
    await node.get_or_load("tomori_state", ws, Loader("cached"))
    # Where a forged message asks the node to acknowledge: a subscriber, a stream's purge. (A
    # reply shaped like an ack subject, $JS.ACK.>, nats-server refuses from any client.)
    trap, trapped = f"trap.{unique()}", []

    async def caught(msg: Msg) -> None:
        trapped.append(msg.subject)

    await nc.subscribe(f"{trap}.>", cb=caught)
    canary = f"CANARY_{unique()}"
    await js.add_stream(name=canary, subjects=[f"{canary}.>"])
    await js.publish(f"{canary}.x", b"kept", stream=canary)
    forged = msgspec.json.encode(CacheInvalidate(event_id="forged", command_id="forged", cache="tomori_state", key=ws,
                                                 occurred_at=datetime.now(UTC).isoformat(), reason="memory_saved"))
    for reply in (f"{trap}.plain", f"$JS.API.STREAM.PURGE.{canary}"):
        await nc.publish(node._inbox().subject, forged, reply=reply)
    # A real invalidation after them, on the same inbox: once it is applied, they were read.
    after = unique()
    await node.get_or_load("user", after, Loader(1))
    await publish_invalidation(js, "user", after)
    await wait_until(lambda: ("user", after) in node.invalidated)
    await nc.flush()
    assert trapped == [] and node.contains("tomori_state", ws)
    assert (await js.stream_info(canary)).state.messages == 1
    await js.delete_stream(canary)


async def test_a_load_racing_an_invalidation_does_not_cache_the_stale_value(make_node, js):
    node = await make_node(cls=RecordingNode)
    ws = unique()
    stale = Loader("before the save", hold=True)
    first = asyncio.create_task(node.get_or_load("tomori_state", ws, stale))
    await stale.started.wait()  # the load has read the old row and not returned yet

    await publish_invalidation(js, "tomori_state", ws)  # the save commits and invalidates
    await wait_until(lambda: ("tomori_state", ws) in node.invalidated)

    # A caller arriving after the invalidation does not join the stale load.
    fresh = Loader("after the save")
    assert await node.get_or_load("tomori_state", ws, fresh) == "after the save"
    stale.release.set()
    assert await first == "before the save"  # its caller asked before the save: fine

    assert node.contains("tomori_state", ws)
    third = Loader("unused")
    assert await node.get_or_load("tomori_state", ws, third) == "after the save"
    assert third.calls == 0


async def test_a_load_racing_a_flush_does_not_cache(make_node):
    node = await make_node()
    held = Loader("old", hold=True)
    task = asyncio.create_task(node.get_or_load("user", "u", held))
    await held.started.wait()
    node.flush("test")
    held.release.set()
    assert await task == "old"
    assert not node.contains("user", "u")


async def test_a_consumer_sequence_gap_flushes(make_node, js, nc):
    """Another puller on the node's durable takes a delivery: the node sees the sequence skip."""
    node = await make_node(cls=RecordingNode)
    ws = unique()
    await node.get_or_load("tomori_state", ws, Loader("cached"))

    thief = await js.pull_subscribe_bind(consumer=node.consumer, stream=subjects.EVENTS_STREAM)
    stolen = asyncio.create_task(thief.fetch(1, timeout=10))
    await nc.flush()
    try:
        for _ in range(100):
            await publish_invalidation(js, "user", unique())
            await asyncio.sleep(0.02)
            if stolen.done():
                break
        assert stolen.done(), "the second puller never got a delivery"
        for msg in stolen.result():
            await msg.ack()
        await publish_invalidation(js, "user", unique())  # the node's next delivery skips one
        await wait_until(lambda: node.stats.gaps >= 1)
    finally:
        stolen.cancel()
        await thief.unsubscribe()

    assert node.stats.flushes >= 1
    assert not node.contains("tomori_state", ws)


def _delivery(nc, consumer: str, *, cseq: int, delivered: int, key: str) -> Msg:
    reply = (f"$JS.ACK.{subjects.EVENTS_STREAM}.{consumer}.{delivered}.{cseq + 100}.{cseq}"
             ".1700000000000000000.0")
    return Msg(_client=nc, subject=subjects.invalidate_subject("user", key), reply=reply, data=b"{}")


async def test_redeliveries_are_not_gaps_but_a_skipped_first_delivery_is(make_node, nc):
    node = await make_node()
    node._last_cseq = 10
    await node.get_or_load("tomori_state", "kept", Loader(1))

    # 11 was delivered and lost; its redelivery comes as 13 (num_delivered 2) after 12.
    await node._apply(_delivery(nc, node.consumer, cseq=12, delivered=1, key="a"))
    assert node.stats.gaps == 1 and node.stats.flushes == 1
    await node.get_or_load("tomori_state", "kept", Loader(1))
    await node._apply(_delivery(nc, node.consumer, cseq=14, delivered=2, key="b"))  # redelivery: not a gap
    await node._apply(_delivery(nc, node.consumer, cseq=15, delivered=1, key="c"))
    assert node.stats.gaps == 1 and node.stats.flushes == 1
    assert node.contains("tomori_state", "kept")
    assert node.stats.invalidations == 3


async def test_a_stopped_node_is_delivered_what_it_missed_and_keeps_the_rest(make_node, js):
    node = await make_node(cls=RecordingNode)
    changed, untouched = unique(), unique()
    await node.get_or_load("tomori_state", changed, Loader("old"))
    await node.get_or_load("tomori_state", untouched, Loader("same"))
    await node.stop()

    await publish_invalidation(js, "tomori_state", changed)
    # While stopped, nothing is served from (or stored in) the cache.
    assert await node.get_or_load("tomori_state", untouched, Loader("read through")) == "read through"
    assert node.stats.bypasses == 1

    await node.start()  # returns once the backlog is applied
    assert ("tomori_state", changed) in node.invalidated
    assert node.stats.flushes == 0
    assert await node.get_or_load("tomori_state", changed, Loader("new")) == "new"
    assert await node.get_or_load("tomori_state", untouched, Loader("unused")) == "same"


async def test_a_node_whose_consumer_vanished_while_stopped_flushes_on_start(make_node, js):
    node = await make_node()
    await node.get_or_load("user", "u", Loader("old"))
    await node.stop()
    await js.delete_consumer(subjects.EVENTS_STREAM, node.consumer)
    await publish_invalidation(js, "user", "u")  # missed for good: the new consumer starts at NEW

    await node.start()
    assert node.stats.flushes == 1
    assert await node.get_or_load("user", "u", Loader("new")) == "new"


async def test_the_consumer_is_updated_to_the_nodes_settings(make_node, js):
    node = await make_node()
    await node.stop()
    info = await js.consumer_info(subjects.EVENTS_STREAM, node.consumer)
    await js.add_consumer(subjects.EVENTS_STREAM, info.config.evolve(ack_wait=99.0, max_ack_pending=5))
    await node.start()
    info = await js.consumer_info(subjects.EVENTS_STREAM, node.consumer)
    assert (info.config.ack_wait, info.config.max_ack_pending) == (10.0, 10_000)
    assert info.config.filter_subject == "cache.invalidate.>"
    assert (info.config.deliver_policy, info.config.ack_policy) == (DeliverPolicy.NEW, AckPolicy.EXPLICIT)


@pytest.fixture
def restartable_nats(tmp_root):
    server = NatsServer(tmp_root / f"nats-restart-{unique()}").start()
    yield server
    server.stop()


async def test_a_disconnect_flushes_and_caching_resumes_after_reconnect(restartable_nats):
    url = restartable_nats.url
    admin = await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    await streams.ensure_stream(admin.jetstream(), streams.events_stream())
    # One node with the client's callbacks wired, one relying on its own detection.
    wired = await CacheNode.connect(url, name=unique("wired-"), poll_seconds=0.3,
                                    connect_options={"reconnect_time_wait": 0.2})
    bare_nc = await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    bare = RecordingNode(bare_nc, name=unique("bare-"), poll_seconds=0.3)
    try:
        for node in (wired, bare):
            await node.start()
            await node.get_or_load("tomori_state", "ws", Loader("before"))
            assert node.contains("tomori_state", "ws")

        await asyncio.to_thread(restartable_nats.stop)
        await wait_until(lambda: not wired.live and not bare.live, timeout=5)
        for node in (wired, bare):
            assert node.stats.flushes >= 1
            assert not node.contains("tomori_state", "ws")
            # Offline: read through, store nothing.
            assert await node.get_or_load("tomori_state", "ws", Loader("offline")) == "offline"
            assert len(node) == 0

        await asyncio.to_thread(restartable_nats.start)  # same port, same data: the consumers survive
        await wait_until(lambda: wired.live and bare.live, timeout=10)
        for node in (wired, bare):
            assert await node.get_or_load("tomori_state", "ws", Loader("after")) == "after"
            assert node.contains("tomori_state", "ws")

        # Invalidations flow again.
        await admin.flush()
        await publish_invalidation(admin.jetstream(), "tomori_state", "ws")
        await wait_until(lambda: not wired.contains("tomori_state", "ws")
                         and not bare.contains("tomori_state", "ws"), timeout=5)
    finally:
        for node in (wired, bare):
            await node.stop(delete_consumer=True)
        await wired.close()
        await bare_nc.close()
        await admin.close()


async def test_run_cache_node_waits_for_the_stream_and_logs_invalidations_until_stopped(restartable_nats):
    from worker.client.cache_node import run_cache_node

    url = restartable_nats.url
    admin = await nats.connect(url)
    js = admin.jetstream()
    name = unique("cli-")
    stop = asyncio.Event()
    runner = asyncio.create_task(run_cache_node(url, name, stop))
    try:
        await asyncio.sleep(0.2)  # no MEMORY_EVENTS yet: it waits
        assert not runner.done()
        await streams.ensure_stream(js, streams.events_stream())

        async def consumer_exists() -> bool:
            try:
                await js.consumer_info(subjects.EVENTS_STREAM, consumer_name(name))
                return True
            except nats.js.errors.NotFoundError:
                return False

        for _ in range(100):
            if await consumer_exists():
                break
            await asyncio.sleep(0.05)
        await publish_invalidation(js, "user", "42")
        # The runner hands its node back only once stopped: wait (bounded) until its consumer
        # has acknowledged the invalidation, which the node does after applying it.
        for _ in range(200):
            info = await js.consumer_info(subjects.EVENTS_STREAM, consumer_name(name))
            if info.delivered.consumer_seq >= 1 and info.num_ack_pending == 0 and info.num_pending == 0:
                break
            await asyncio.sleep(0.025)
        stop.set()
        node = await asyncio.wait_for(runner, 5)
        assert node.stats.invalidations == 1
        assert node.nc.is_closed
    finally:
        stop.set()
        runner.cancel()
        await admin.close()
