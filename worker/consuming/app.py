"""The worker process: wiring of the NATS connection, database, outbox and per-partition consumers."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import nats
import structlog
from nats.errors import ConnectionClosedError

from contracts import subjects
from contracts.lookup import wants_outcome
from db.connection import Timeouts
from db.migrate import prepare_dsn
from db.repository import MemoryRepository, create_pool
from worker.consuming import metrics, streams
from worker.consuming.background import cancel_requested
from worker.consuming.handlers import CommandHandler
from worker.consuming.lookup import CommandOutcomes, lookup_key
from worker.consuming.outbox import OutboxPublisher
from worker.consuming.partitions import PartitionConsumers
from worker.consuming.replication_check import check_replication, watch_replication
from worker.consuming.retention import retain_forever as retention_loop
from worker.domain.model import Limits
from worker.services.create_batch import BatchedCreateService
from worker.services.create_memory import CreateMemoryService
from worker.services.manual import ManualMemoryService
from worker.services.reinforce import ReinforceService
from worker.services.seed_bio import SeedBioService
from worker.shared.settings import Settings

log = structlog.get_logger("worker")

# Published events stay in the outbox this long after publishing (the stream keeps 7 days).
OUTBOX_RETENTION_DAYS = 7
PRUNE_INTERVAL_S = 3600.0
# A connection to a node cut off by a partition stays open but dead; nats-py notices only
# when pings go unanswered (by default every 2 minutes, two missed). Measured in tests/faults
# (partition-leader-with-worker): with the default, a worker whose node was cut from it
# served nothing for the whole 30 s partition; pinging every 3 s it reconnects to another
# node within about 10 s.
PING_INTERVAL_S = 3
MAX_OUTSTANDING_PINGS = 2
# How long a worker whose connection closed lets the commands it is running finish.
CLOSED_STOP_S = 3.0
# How long the pool's connections get to close politely at the end; a database that is away
# answers nothing, and the connections are then dropped.
POOL_CLOSE_S = 5.0


class NatsConnectionClosed(RuntimeError):
    """The NATS client closed its connection for good (the server closed it after a protocol
    error, or refused the credentials again): reconnecting cannot bring it back, so the worker
    stops and exits non-zero, and its supervisor starts it with a new connection."""


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


def build_handler(nc, js, outbox: OutboxPublisher, repo: MemoryRepository, settings: Settings) -> CommandHandler:
    limits = limits_from(settings)
    services = {
        "create": BatchedCreateService(CreateMemoryService(repo, limits), repo, max_batch=settings.create_batch_max,
                                       runners=settings.create_batch_runners, observe=metrics.CREATE_BATCH.observe),
        "manual": ManualMemoryService(repo, limits),
        "reinforce": ReinforceService(repo),
        "seed_bio": SeedBioService(repo, limits, settings.message_proxy_bio_seed_max_chars),
    }
    return CommandHandler(nc, js, outbox, services, repo.stored_result, max_deliver=settings.max_deliver,
                          reply_prefixes=settings.reply_subject_prefixes,
                          max_command_bytes=settings.max_command_bytes, tenant_lineages=settings.tenant_lineages)


def _result_lookup(repo: MemoryRepository, outcomes: CommandOutcomes):
    async def answer(msg) -> None:
        if not msg.reply:
            return
        try:
            _, _, workspace_token, command_token = msg.subject.split(".", 3)
            key = lookup_key(command_token, workspace_token)
            if wants_outcome(msg.data):  # the richer answer; an empty request keeps the original one
                await msg.respond(await outcomes.describe(workspace_token, command_token))
                return
            stored = None if key is None else await repo.stored_result(*key)
        except Exception as exc:  # a lookup must never take the worker down; the asker retries
            log.warning("result_lookup_failed", subject=msg.subject, error=repr(exc))
            return
        await msg.respond(stored if stored is not None else b"null")

    return answer


async def _prune_forever(repo: MemoryRepository, inbox_days: int) -> None:
    while not cancel_requested():
        try:
            removed = await repo.prune(inbox_days, OUTBOX_RETENTION_DAYS)
            if removed:
                log.info("pruned", rows=removed)
        except Exception as exc:
            log.warning("prune_failed", error=repr(exc))
        await asyncio.sleep(PRUNE_INTERVAL_S)


def timeouts_from(settings: Settings) -> Timeouts:
    return Timeouts(connect_s=float(settings.db_connect_timeout_seconds),
                    command_s=float(settings.db_command_timeout_seconds))


async def _close_pool(pool) -> None:
    try:
        await asyncio.wait_for(pool.close(), POOL_CLOSE_S)
    except (TimeoutError, asyncio.TimeoutError):  # close() terminates the connections left when cut short
        log.warning("database_pool_close_timed_out", note="connections dropped: the database did not answer")


async def serve(settings: Settings, endpoints: Endpoints, stop: asyncio.Event,
                ready: asyncio.Event | None = None) -> None:
    timeouts = timeouts_from(settings)
    applied, database_mode = await prepare_dsn(endpoints.database_url, timeouts)
    if applied:
        log.info("migrations_applied", names=applied)
    log.info("database_mode", mode=database_mode)
    closed = asyncio.Event()
    async with contextlib.AsyncExitStack() as stack:
        pool = await create_pool(endpoints.database_url, max_size=settings.db_pool_size, timeouts=timeouts,
                                 tenant=settings.tenant)
        stack.push_async_callback(_close_pool, pool)
        replication_state = await check_replication(pool, settings)
        repo = MemoryRepository(pool, settings.tenant)
        # nats-py directly, one connection and one credentials path (NatsAuth.connect_options)
        # for every process: FastStream's subscribers cannot express the pinned priority groups
        # and cost several times nats-py's CPU per message (README, "Libraries").
        nc = await nats.connect(
            endpoints.nats_url.split(","),
            max_reconnect_attempts=-1,  # keep trying: a restarted NATS must not need a worker restart
            reconnect_time_wait=1,
            connect_timeout=5,
            ping_interval=PING_INTERVAL_S,
            max_outstanding_pings=MAX_OUTSTANDING_PINGS,
            name="memory-worker",
            disconnected_cb=_nats_disconnected(stop),
            closed_cb=_nats_closed(stop, closed),
            reconnected_cb=_nats_reconnected,
            error_cb=_nats_error,
            **settings.nats_auth.connect_options(),
        )
        stack.push_async_callback(_drain, nc)
        js = nc.jetstream()
        retention = streams.CommandRetention(max_age_s=settings.command_max_age_hours * 3600.0,
                                             max_bytes=settings.command_max_mib * 1024 * 1024)
        await streams.provision(js, nc, partitions=settings.memory_partitions, ack_wait_s=settings.ack_wait_seconds,
                                replicas=settings.stream_replicas, in_flight=settings.partition_in_flight,
                                retention=retention, tenant=settings.tenant)

        # Atomic batches only where the stream takes them (nats-server 2.12+ with allow_atomic):
        # elsewhere the batch headers would be ignored and the messages stored one by one.
        atomic = bool((await js.stream_info(subjects.EVENTS_STREAM)).config.allow_atomic)
        if not atomic:
            log.warning("atomic_publish_unavailable", stream=subjects.EVENTS_STREAM,
                        note="events are published command by command")
        outbox = OutboxPublisher(js, repo, nc=nc if atomic else None)
        stack.push_async_callback(outbox.stop)
        swept = await outbox.sweep()  # leftovers of a crash go out before anything new
        tasks = [asyncio.create_task(outbox.run(), name="outbox-relay"),
                 asyncio.create_task(_prune_forever(repo, settings.inbox_retention_days), name="prune"),
                 asyncio.create_task(retention_loop(js, nc, partitions=settings.memory_partitions, retention=retention,
                                                    reply_prefixes=settings.reply_subject_prefixes),
                                     name="command-retention"),
                 asyncio.create_task(watch_replication(pool, replication_state), name="replication-watch")]
        stack.push_async_callback(_cancel, tasks)

        lookups = await nc.subscribe(subjects.RESULT_LOOKUP_SUBJECTS, queue="memory-worker",
                                     cb=_result_lookup(repo, CommandOutcomes(repo, js, settings.reply_subject_prefixes)))

        handler = build_handler(nc, js, outbox, repo, settings)
        stack.push_async_callback(handler.aclose, float(settings.ack_wait_seconds))
        consumers = PartitionConsumers(js, nc, handler, settings.memory_partitions,
                                       in_flight=settings.partition_in_flight,
                                       ack_wait_s=float(settings.ack_wait_seconds))
        # On the stack too: should anything below fail, the loops stop before outbox and pool close.
        stack.push_async_callback(consumers.stop, float(settings.ack_wait_seconds))
        await consumers.start()
        if settings.metrics_port:
            # Serving starts only now, with the consumers bound: ready while connected and not stopping.
            http = await metrics.serve_http(settings.metrics_host, settings.metrics_port,
                                            healthy=lambda: nc.is_connected and not stop.is_set() and not closed.is_set())
            stack.push_async_callback(_close_server, http)
        metrics.READY.set(1)
        log.info("worker_ready", partitions=settings.memory_partitions, nats=endpoints.nats_url,
                 swept_outbox_rows=swept)
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("worker_stopping")
        # First stop taking work and let the command in hand finish (it still needs the outbox
        # and the pool); the exit stack then stops the relay, flushes, and closes the pool.
        metrics.READY.set(0)
        with contextlib.suppress(Exception):  # a closed connection has no subscriptions left
            await lookups.unsubscribe()
        # Long enough for the command in hand: statement and lock timeouts plus publishing; with
        # the connection closed nothing can be settled, and what is in hand is redelivered anyway.
        await consumers.stop(timeout=CLOSED_STOP_S if closed.is_set() else float(settings.ack_wait_seconds))
    if closed.is_set():
        raise NatsConnectionClosed("the NATS connection was closed and cannot be reconnected")
    log.info("worker_stopped")


def _nats_disconnected(stop: asyncio.Event):
    async def disconnected() -> None:
        if not stop.is_set():  # a drain at shutdown disconnects too: nothing to warn about
            log.warning("nats_disconnected", note="reconnecting; commands wait in JetStream meanwhile")

    return disconnected


def _nats_closed(stop: asyncio.Event, closed: asyncio.Event):
    async def on_closed() -> None:
        if stop.is_set():  # the worker's own close at shutdown
            return
        closed.set()
        log.error("nats_connection_closed", note="the client will not reconnect: stopping, to exit non-zero "
                  "and be restarted with a new connection")
        stop.set()

    return on_closed


async def _nats_reconnected() -> None:
    log.info("nats_reconnected")


async def _nats_error(exc: Exception) -> None:
    log.warning("nats_error", error=repr(exc))


async def _drain(nc: nats.NATS) -> None:
    with contextlib.suppress(ConnectionClosedError):  # closed already: nothing left to drain
        await nc.drain()


async def _close_server(server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()


async def _cancel(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
