"""Streams, partitions and the outbox on a real nats-server of this module's own."""

from __future__ import annotations

import asyncio
from collections import Counter

import msgspec
import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from db.repository import MemoryRepository
from tests.support.partitions import partition_of
from worker.consuming.administration import streams
from worker.consuming.intake.partitions import PartitionConsumers
from worker.consuming.outbox.publisher import OutboxPublisher

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


async def _insert_outbox(pool, command_id: str, n: int) -> list[int]:
    ids = []
    async with pool.acquire() as conn:
        for i in range(n):
            eid = f"{command_id}:e{i}"
            ids.append(await conn.fetchval(
                "INSERT INTO outbox (command_id, subject, headers, payload, created_at)"
                " VALUES ($1, $2, $3::jsonb, $4::jsonb, now() - interval '1 minute') RETURNING id",
                command_id, f"cache.invalidate.user.{command_id}",
                msgspec.json.encode({"Nats-Msg-Id": eid}).decode(),
                msgspec.json.encode({"event_id": eid, "n": i}).decode()))
    return ids


async def _events_for(js, subject: str) -> list[nats.aio.msg.Msg]:
    sub = await js.pull_subscribe(subject, stream=subjects.EVENTS_STREAM,
                                  config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
    out = []
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


async def test_sweeper_publishes_rows_a_crash_left_behind_in_order_and_once(js, pool):
    cid = unique("crash")
    ids = await _insert_outbox(pool, cid, 25)
    outbox = OutboxPublisher(js, MemoryRepository(pool), sweep_age=1.0)

    assert await outbox.sweep() == 25
    # Marked published: a second sweep finds nothing. Even if marking had been lost, a
    # re-publish would be dropped by the stream's duplicate window.
    assert await outbox.sweep() == 0
    async with pool.acquire() as conn:
        await conn.execute("UPDATE outbox SET published_at = NULL WHERE id = ANY($1)", ids)
    assert await outbox.sweep() == 25

    events = await _events_for(js, f"cache.invalidate.user.{cid}")
    assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(25))
    assert Counter(m.headers["Nats-Msg-Id"] for m in events).most_common(1)[0][1] == 1


async def test_sweeper_leaves_rows_still_in_flight_to_their_handler(js, pool):
    cid = unique("fresh")
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO outbox (command_id, subject, payload) VALUES ($1, 'cache.invalidate.user.x', '{}')", cid)
    assert await OutboxPublisher(js, MemoryRepository(pool), sweep_age=30.0).sweep() == 0


async def test_published_rows_are_marked_in_batches(js, pool):
    cid = unique("batch")
    ids = await _insert_outbox(pool, cid, 3)
    repo = MemoryRepository(pool)
    rows = await repo.unpublished(0.0, 1000)
    outbox = OutboxPublisher(js, repo)
    await outbox.publish([r for r in rows if r.id in ids])
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE id = ANY($1) AND published_at IS NULL",
                                   ids) == 3
    await outbox.flush()
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE id = ANY($1) AND published_at IS NULL",
                                   ids) == 0


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


async def test_a_row_that_cannot_be_published_does_not_hold_back_the_others(js, pool):
    bad, good = unique("bad"), unique("good")
    async with pool.acquire() as conn:
        # No stream captures this subject: publishing it fails every time.
        await conn.execute(
            "INSERT INTO outbox (command_id, subject, headers, payload, created_at)"
            " VALUES ($1, 'nowhere.at.all', $2::jsonb, '{}', now() - interval '1 minute')", bad,
            '{"Nats-Msg-Id": "x"}')
    await _insert_outbox(pool, good, 3)
    outbox = OutboxPublisher(js, MemoryRepository(pool), sweep_age=1.0, ack_timeout=2.0)

    assert await outbox.sweep() == 3
    async with pool.acquire() as conn:
        left = await conn.fetch("SELECT command_id FROM outbox WHERE published_at IS NULL"
                                " AND command_id = ANY($1)", [bad, good])
    assert [r[0] for r in left] == [bad]


async def _rows_of(pool, command_id: str, n: int):
    ids = await _insert_outbox(pool, command_id, n)
    return [r for r in await MemoryRepository(pool).unpublished(0.0, 10_000) if r.id in ids]


async def test_rows_of_several_commands_go_out_as_one_atomic_batch_in_order(js, nc, pool):
    first, second = unique("atomic-a"), unique("atomic-b")
    groups = [await _rows_of(pool, first, 5), await _rows_of(pool, second, 5)]
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc)

    assert await outbox.publish_together(groups)

    for cid in (first, second):
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(5))
    # Handed to the batched marking like any published row.
    await outbox.flush()
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE command_id = ANY($1) AND published_at IS NULL",
                                   [first, second]) == 0


async def test_a_batch_holding_an_already_published_row_is_refused_whole_and_left_to_the_single_path(js, nc, pool):
    """JetStream rejects an atomic batch with a duplicate Nats-Msg-Id outright: nothing of it
    is stored, the caller is told, and publishing command by command then stores the rest."""
    done, fresh = unique("atomic-done"), unique("atomic-fresh")
    published = await _rows_of(pool, done, 4)
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc)
    await outbox.publish(published)
    new_rows = await _rows_of(pool, fresh, 4)

    assert not await outbox.publish_together([published, new_rows])
    assert await _events_for(js, f"cache.invalidate.user.{fresh}") == []

    await outbox.publish(published)
    await outbox.publish(new_rows)
    assert len(await _events_for(js, f"cache.invalidate.user.{done}")) == 4
    assert len(await _events_for(js, f"cache.invalidate.user.{fresh}")) == 4


async def test_too_few_rows_for_a_batch_are_left_to_the_single_path(js, nc, pool):
    rows = await _rows_of(pool, unique("atomic-small"), 2)
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc)
    assert not await outbox.publish_together([rows])
    assert not await OutboxPublisher(js, MemoryRepository(pool)).publish_together([rows * 10])


async def test_commands_publishing_at_once_share_one_atomic_batch(js, nc, pool):
    """Handlers that publish at the same moment: one atomic batch for all of them (the stored
    events carry its batch id), each command's rows in order, all marked published."""
    ids = [unique(f"together-{i}") for i in range(6)]
    groups = [await _rows_of(pool, cid, 3) for cid in ids]
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc)

    await asyncio.gather(*(outbox.publish_coalesced(rows) for rows in groups))

    batches = set()
    for cid in ids:
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(3))
        batches |= {(m.headers or {}).get("Nats-Batch-Id") for m in events}
    assert len(batches - {None}) == 1 and None not in batches
    await outbox.flush()
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE command_id = ANY($1) AND published_at IS NULL",
                                   ids) == 0


async def test_a_refused_shared_batch_still_stores_every_command_once(js, nc, pool):
    """One command's rows were published before: JetStream refuses the whole atomic batch by
    that Nats-Msg-Id, and every command's rows then go out on their own, each stored once."""
    done = unique("together-done")
    published = await _rows_of(pool, done, 4)
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc)
    await outbox.publish(published)
    fresh = [unique(f"together-fresh-{i}") for i in range(4)]
    groups = [published] + [await _rows_of(pool, cid, 4) for cid in fresh]

    await asyncio.gather(*(outbox.publish_coalesced(rows) for rows in groups))

    for cid in [done, *fresh]:
        events = await _events_for(js, f"cache.invalidate.user.{cid}")
        assert [msgspec.json.decode(m.data)["n"] for m in events] == list(range(4))
        if cid != done:  # stored on their own after the refusal, not in a batch
            assert all("Nats-Batch-Id" not in (m.headers or {}) for m in events)


async def test_a_command_whose_rows_cannot_be_stored_fails_alone(js, nc, pool):
    bad, good = unique("together-bad"), unique("together-good")
    async with pool.acquire() as conn:
        # No stream captures this subject: publishing it fails every time.
        await conn.execute(
            "INSERT INTO outbox (command_id, subject, headers, payload) VALUES ($1, 'nowhere.at.all', $2::jsonb, '{}')",
            bad, '{"Nats-Msg-Id": "' + bad + '"}')
    bad_rows = [r for r in await MemoryRepository(pool).unpublished(0.0, 10_000) if r.command_id == bad]
    outbox = OutboxPublisher(js, MemoryRepository(pool), nc=nc, ack_timeout=2.0)
    good_groups = [await _rows_of(pool, f"{good}-{i}", 3) for i in range(3)]

    results = await asyncio.gather(*(outbox.publish_coalesced(rows) for rows in [*good_groups, bad_rows]),
                                   return_exceptions=True)

    assert [r is None for r in results] == [True, True, True, False]
    for i in range(3):
        assert len(await _events_for(js, f"cache.invalidate.user.{good}-{i}")) == 3


async def test_a_publish_cancelled_on_its_own_fails_its_command_like_an_error(js, nc, pool):
    """Only the caller whose rows were not stored hears of it, and as an ordinary error: a
    CancelledError would slip past the handler's error path and leave the command unsettled."""

    class CancelsOne(OutboxPublisher):
        async def publish(self, rows):
            if rows[0].command_id == doomed:
                raise asyncio.CancelledError()
            await super().publish(rows)

    doomed, fine = unique("together-cancelled"), unique("together-fine")
    groups = [await _rows_of(pool, doomed, 1), await _rows_of(pool, fine, 1)]  # too few rows for a batch
    outbox = CancelsOne(js, MemoryRepository(pool), nc=nc)

    results = await asyncio.gather(*(outbox.publish_coalesced(rows) for rows in groups), return_exceptions=True)

    assert isinstance(results[0], RuntimeError) and results[1] is None
    assert len(await _events_for(js, f"cache.invalidate.user.{fine}")) == 1
