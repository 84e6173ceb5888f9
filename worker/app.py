"""The worker process: wiring of broker, database, outbox and per-partition subscribers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg
import structlog
from faststream import AckPolicy
from faststream.nats import JStream, NatsBroker, PullSub
from faststream.nats.annotations import NatsMessage

from contracts import subjects
from db.migrate import migrate
from db.repository import MemoryRepository, create_pool
from worker import streams
from worker.domain.model import Limits
from worker.handlers import CommandHandler
from worker.outbox import OutboxPublisher
from worker.services.create_memory import CreateMemoryService
from worker.services.manual import ManualMemoryService
from worker.services.reinforce import ReinforceService
from worker.services.seed_bio import SeedBioService
from worker.settings import Settings

log = structlog.get_logger("worker")


@dataclass(frozen=True, slots=True)
class Endpoints:
    nats_url: str
    database_url: str


def limits_from(settings: Settings) -> Limits:
    return Limits(
        max_memory_length=settings.max_memory_length,
        max_server_memories=settings.max_server_memories,
        max_personal_memories=settings.max_personal_memories,
    )


async def apply_migrations(database_url: str) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        return await migrate(conn)
    finally:
        await conn.close()


def build_broker(nats_url: str, settings: Settings, handler_ref: list) -> NatsBroker:
    broker = NatsBroker(
        nats_url.split(","),
        max_reconnect_attempts=-1,  # keep trying: a restarted NATS must not need a worker restart
        reconnect_time_wait=1,
        connect_timeout=5,
        logger=None,
        name="memory-worker",
    )
    stream = JStream(subjects.COMMANDS_STREAM, declare=False)

    async def on_command(message: NatsMessage) -> None:
        await handler_ref[0](message.raw_message)

    for partition in range(settings.memory_partitions):
        broker.subscriber(
            subjects.partition_filter(partition),
            stream=stream,
            durable=streams.partition_consumer_name(partition),
            # batch_size=1 and no max_workers: one command at a time per partition, in order.
            pull_sub=PullSub(batch_size=1, timeout=5.0),
            ack_policy=AckPolicy.MANUAL,
            no_reply=True,
        )(on_command)
    return broker


def _result_lookup(repo: MemoryRepository):
    async def answer(msg) -> None:
        if not msg.reply:
            return
        try:
            command_id = subjects.decode_token(msg.subject.split(".", 2)[2])
            stored = await repo.stored_result(command_id)
        except Exception as exc:  # a lookup must never take the worker down; the asker retries
            log.warning("result_lookup_failed", error=repr(exc))
            return
        await msg.respond(stored if stored is not None else b"null")

    return answer


async def serve(settings: Settings, endpoints: Endpoints, stop: asyncio.Event,
                ready: asyncio.Event | None = None) -> None:
    applied = await apply_migrations(endpoints.database_url)
    if applied:
        log.info("migrations_applied", names=applied)
    pool = await create_pool(endpoints.database_url, max_size=settings.db_pool_size)
    repo = MemoryRepository(pool)
    handler_ref: list = [None]
    broker = build_broker(endpoints.nats_url, settings, handler_ref)
    await broker.connect()
    nc = broker.connection
    js = nc.jetstream()
    await streams.provision(js, partitions=settings.memory_partitions, ack_wait_s=settings.ack_wait_seconds,
                            max_deliver=settings.max_deliver)
    outbox = OutboxPublisher(js, repo)
    swept = await outbox.sweep()
    limits = limits_from(settings)
    services = {
        "create": CreateMemoryService(repo, limits),
        "manual": ManualMemoryService(repo, limits),
        "reinforce": ReinforceService(repo),
        "seed_bio": SeedBioService(repo, limits, settings.message_proxy_bio_seed_max_chars),
    }
    handler_ref[0] = CommandHandler(nc, js, outbox, services, max_deliver=settings.max_deliver)
    relay = asyncio.create_task(outbox.run(), name="outbox-relay")
    lookups = await nc.subscribe(subjects.RESULT_LOOKUP_SUBJECTS, queue="memory-worker",
                                 cb=_result_lookup(repo))
    await broker.start()
    log.info("worker_ready", partitions=settings.memory_partitions, nats=endpoints.nats_url,
             swept_outbox_rows=swept)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        log.info("worker_stopping")
        # Stops fetching and lets the command in hand finish before the connection drains.
        await lookups.unsubscribe()
        await broker.stop()
        await outbox.stop()
        relay.cancel()
        await asyncio.gather(relay, return_exceptions=True)
        await pool.close()
        log.info("worker_stopped")
