"""Streams, partitions and the event publisher on a real nats-server of this module's own."""

from __future__ import annotations

import asyncio

import msgspec
import nats
import pytest
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from db.inbox import EventRow
from tests.support.partitions import partition_of
from worker.consuming.administration import streams
from worker.consuming.events.publisher import EventPublisher
from worker.consuming.intake.partitions import PartitionConsumers

from ..conftest import unique
from .helpers import raw_consumer_info

PARTITIONS = 8


@pytest.fixture
async def nc(own_nats):
    client = await nats.connect(own_nats.url)
    yield client
    await client.close()


@pytest.fixture
async def js(nc):
    jsctx = nc.jetstream()
    await streams.provision(jsctx, nc, partitions=PARTITIONS, ack_wait_s=20)
    return jsctx


async def test_the_server_files_each_workspace_under_the_partition_we_compute(js, nc):
    workspaces = [unique() for _ in range(40)] + ["a.b", "ws with space", "pk:9f"]
    for ws in workspaces:
        await js.publish(subjects.command_subject("create", ws), b"{}", stream=subjects.COMMANDS_STREAM)
    seen = {}
    all_seen = asyncio.Event()

    async def record(m):
        _, token = subjects.parse_partitioned(m.subject)
        seen[subjects.decode_token(token)] = int(m.subject.split(".")[1])
        await m.ack()
        if len(seen) == len(workspaces):
            all_seen.set()

    consumers = PartitionConsumers(js, nc, record, PARTITIONS)
    await consumers.start()
    await asyncio.wait_for(all_seen.wait(), 30)
    await consumers.stop(timeout=5)
    assert seen == {ws: partition_of(subjects.encode_token(ws), PARTITIONS) for ws in workspaces}
    assert len(set(seen.values())) > 1


async def test_provisioning_updates_a_consumer_whose_settings_drifted(js, nc):
    name = streams.partition_consumer_name(0)
    drifted = streams.partition_consumer(0, ack_wait_s=20)
    drifted.max_ack_pending = 99
    await js.add_consumer(subjects.COMMANDS_STREAM, drifted)
    assert (await js.consumer_info(subjects.COMMANDS_STREAM, name)).config.max_ack_pending == 99
    await streams.provision(js, nc, partitions=PARTITIONS, ack_wait_s=20)
    info = await raw_consumer_info(nc, subjects.COMMANDS_STREAM, name)
    assert info["config"]["max_ack_pending"] == streams.DEFAULT_IN_FLIGHT
    assert info["config"]["max_deliver"] == -1
    # One replica at a time per partition: the order of a workspace's commands depends on it.
    assert info["config"]["priority_policy"] == "pinned_client"
    assert info["config"]["priority_groups"] == [streams.PARTITION_GROUP]


async def test_a_consumer_setting_the_server_refuses_is_a_clear_error(nc):
    refused = streams.partition_consumer(0, ack_wait_s=20)
    refused.ack_policy = AckPolicy.NONE  # neither updatable nor allowed with pinned_client
    with pytest.raises(streams.ConsumerProvisionError, match="memory-worker-p0"):
        await streams.ensure_partition_consumer(nc, refused)


def _events(command_id: str, n: int, subject: str | None = None) -> list[EventRow]:
    """A command's events as its inbox row keeps them."""
    out: list[EventRow] = []
    for i in range(n):
        eid = f"{command_id}:e{i}"
        out.append(EventRow(subject or f"cache.invalidate.user.{command_id}", {"Nats-Msg-Id": eid},
                            msgspec.Raw(msgspec.json.encode({"event_id": eid, "n": i}))))
    return out


async def _events_for(js, subject: str) -> list[Msg]:
    sub = await js.pull_subscribe(subject, stream=subjects.EVENTS_STREAM,
                                  config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
    out: list[Msg] = []
    # Read until the consumer has nothing left, not until a fetch times out: on a busy machine
    # a short fetch can time out before the stored messages arrive.
    while (await sub.consumer_info()).num_pending or not out:
        try:
            out += await sub.fetch(100, timeout=2)
        # nats-py raises the plain one too when its deadline runs out early
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            if not (await sub.consumer_info()).num_pending:
                break
    await sub.unsubscribe()
    return out


async def test_concurrent_migrations_apply_each_file_once(pg_server):
    import asyncpg

    from db.migrate import available, migrate_dsn

    name = f"mig_{unique()}"
    conn = await asyncpg.connect(pg_server.dsn())
    await conn.execute(f"CREATE DATABASE {name}")
    await conn.close()
    applied = await asyncio.gather(*(migrate_dsn(pg_server.dsn(name)) for _ in range(4)))
    names = [n for run in applied for n in run]
    assert sorted(names) == sorted(m.name for m in available())


async def test_a_commands_events_are_stored_in_order_and_invalidations_first(js):
    cid = unique("order")
    events = _events(cid, 3) + _events(f"{cid}-saved", 2, subject=subjects.saved_subject("server", cid))
    await EventPublisher(js).publish(events)
    stored = await _events_for(js, f"cache.invalidate.user.{cid}")
    assert [msgspec.json.decode(m.data)["n"] for m in stored] == [0, 1, 2]
    saved = await _events_for(js, subjects.saved_subject("server", cid))
    assert stored[-1].metadata.sequence.stream < saved[0].metadata.sequence.stream


async def test_events_of_several_commands_go_out_as_one_atomic_batch_in_order(js, nc):
    first, second = unique("atomic-a"), unique("atomic-b")
    groups = [_events(first, 5), _events(second, 5)]

    assert await EventPublisher(js, nc=nc).publish_together(groups)

    for cid in (first, second):
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(5))


async def test_a_batch_holding_an_already_published_event_is_refused_whole_and_left_to_the_single_path(js, nc):
    """JetStream rejects an atomic batch with a duplicate Nats-Msg-Id outright: nothing of it
    is stored, the caller is told, and publishing command by command then stores the rest."""
    done, fresh = unique("atomic-done"), unique("atomic-fresh")
    published = _events(done, 4)
    events = EventPublisher(js, nc=nc)
    await events.publish(published)
    new_events = _events(fresh, 4)

    assert not await events.publish_together([published, new_events])
    assert await _events_for(js, f"cache.invalidate.user.{fresh}") == []

    await events.publish(published)
    await events.publish(new_events)
    assert len(await _events_for(js, f"cache.invalidate.user.{done}")) == 4
    assert len(await _events_for(js, f"cache.invalidate.user.{fresh}")) == 4


async def test_too_few_events_for_a_batch_are_left_to_the_single_path(js, nc):
    events = _events(unique("atomic-small"), 2)
    assert not await EventPublisher(js, nc=nc).publish_together([events])
    assert not await EventPublisher(js).publish_together([events * 10])


async def test_commands_publishing_at_once_share_one_atomic_batch(js, nc):
    """Handlers that publish at the same moment: one atomic batch for all of them (the stored
    events carry its batch id), each command's events in order."""
    ids = [unique(f"together-{i}") for i in range(6)]
    publisher = EventPublisher(js, nc=nc)

    await asyncio.gather(*(publisher.publish_coalesced(_events(cid, 3)) for cid in ids))

    batches = set()
    for cid in ids:
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(3))
        batches |= {(m.headers or {}).get("Nats-Batch-Id") for m in events}
    assert len(batches - {None}) == 1 and None not in batches


async def test_a_refused_shared_batch_still_stores_every_command_once(js, nc):
    """One command's events were published before: JetStream refuses the whole atomic batch by
    that Nats-Msg-Id, and every command's events then go out on their own, each stored once."""
    done = unique("together-done")
    published = _events(done, 4)
    publisher = EventPublisher(js, nc=nc)
    await publisher.publish(published)
    fresh = [unique(f"together-fresh-{i}") for i in range(4)]
    groups = [published] + [_events(cid, 4) for cid in fresh]

    await asyncio.gather(*(publisher.publish_coalesced(events) for events in groups))

    for cid in [done, *fresh]:
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(4))
        if cid != done:  # stored on their own after the refusal, not in a batch
            assert all("Nats-Batch-Id" not in (m.headers or {}) for m in events)


async def test_a_command_whose_events_cannot_be_stored_fails_alone(js, nc):
    bad, good = unique("together-bad"), unique("together-good")
    # No stream captures this subject: publishing it fails every time.
    bad_events = _events(bad, 1, subject="nowhere.at.all")
    publisher = EventPublisher(js, nc=nc, ack_timeout=2.0)
    good_groups = [_events(f"{good}-{i}", 3) for i in range(3)]

    results = await asyncio.gather(*(publisher.publish_coalesced(events) for events in [*good_groups, bad_events]),
                                   return_exceptions=True)

    assert [r is None for r in results] == [True, True, True, False]
    for i in range(3):
        assert len(await _events_for(js, f"cache.invalidate.user.{good}-{i}")) == 3


async def test_a_publish_cancelled_on_its_own_fails_its_command_like_an_error(js, nc):
    """Only the caller whose events were not stored hears of it, and as an ordinary error: a
    CancelledError would slip past the handler's error path and leave the command unsettled."""

    class CancelsOne(EventPublisher):
        async def publish(self, events):
            if events[0].headers["Nats-Msg-Id"].startswith(doomed):
                raise asyncio.CancelledError()
            await super().publish(events)

    doomed, fine = unique("together-cancelled"), unique("together-fine")
    groups = [_events(doomed, 1), _events(fine, 1)]  # too few events for a batch
    publisher = CancelsOne(js, nc=nc)

    results = await asyncio.gather(*(publisher.publish_coalesced(events) for events in groups), return_exceptions=True)

    assert isinstance(results[0], RuntimeError) and results[1] is None
    assert len(await _events_for(js, f"cache.invalidate.user.{fine}")) == 1
