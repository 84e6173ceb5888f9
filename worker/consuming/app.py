"""The worker process's composition root: the database, the NATS connection, the streams,
the event publisher, the result lookup and the per-partition consumers, started in that order
and stopped in reverse."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, TypeVar, assert_never

import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from contracts import registry, subjects
from contracts.envelope import Envelope
from contracts.registry import COMMAND_KINDS, CommandKind, CommandSpec
from db.migrate import prepare_dsn
from db.pool import create_pool
from db.repository import MemoryRepository
from worker.consuming import collector, connection, metrics
from worker.consuming.administration import streams
from worker.consuming.administration.inbox_prune import prune_forever
from worker.consuming.administration.retention import retain_forever as retention_loop
from worker.consuming.connection import NatsConnectionClosed
from worker.consuming.database import close_pool, timeouts_from
from worker.consuming.events.publisher import EventPublisher
from worker.consuming.intake.handlers import CommandHandler
from worker.consuming.intake.partitions import PartitionConsumers
from worker.consuming.limits import limits_from
from worker.consuming.lookup.answer import ResultLookups
from worker.consuming.lookup.outcomes import CommandOutcomes
from worker.consuming.replication_check import check_replication, watch_replication
from worker.kinds.create import service as create
from worker.kinds.manual import service as manual
from worker.kinds.reinforce import service as reinforce
from worker.kinds.seed_bio import service as seed_bio
from worker.kinds.shadow import service as shadow
from worker.kinds.shadow.service import DryRunning
from worker.kinds.update import service as update
from worker.services.base import CommandService, Wiring
from worker.shared.settings import Settings

log = structlog.get_logger("worker")

# How long a worker whose connection closed lets the commands it is running finish.
CLOSED_STOP_S = 3.0


@dataclass(frozen=True, slots=True)
class Endpoints:
    nats_url: str
    database_url: str


C = TypeVar("C", bound=Envelope)
K = TypeVar("K", bound=CommandKind)


def build_services(repo: MemoryRepository, settings: Settings) -> dict[str, CommandService[Any]]:
    """The service table: one service for each kind of the command registry, by its kind (the
    handler decodes with the kind's decoder and runs services[kind]). Every kind a bot may shadow
    keeps its dry runs for the shadow report (a report's own dry run stores nothing)."""
    wiring = Wiring(repo, settings, limits_from(settings), observe_batch=metrics.CREATE_BATCH.observe)
    return {kind: _service(kind, wiring) if kind == "shadow" else DryRunning(kind, _service(kind, wiring), repo)
            for kind in COMMAND_KINDS}


def _service(kind: CommandKind, wiring: Wiring) -> CommandService[Any]:
    """The service of a kind, built by its package (worker/kinds/<kind>/service.py). mypy holds
    the match to every kind of the registry (assert_never) and, through `_serving`, each
    service to its entry's command type."""
    match kind:
        case "create":
            return _serving(kind, registry.CREATE, create.build(wiring))
        case "manual":
            return _serving(kind, registry.MANUAL, manual.build(wiring))
        case "reinforce":
            return _serving(kind, registry.REINFORCE, reinforce.build(wiring))
        case "seed_bio":
            return _serving(kind, registry.SEED_BIO, seed_bio.build(wiring))
        case "shadow":
            return _serving(kind, registry.SHADOW, shadow.build(wiring))
        case "update":
            return _serving(kind, registry.UPDATE, update.build(wiring))
        case _:
            assert_never(kind)


def _serving(kind: K, spec: CommandSpec[K, C, Any], service: CommandService[C]) -> CommandService[Any]:
    """`service` as the service of `kind`: mypy checks that `spec` is that kind's entry and that
    the service takes the entry's command type ("Cannot infer value of type parameter" when
    either is not so)."""
    return service


def build_handler(nc: NatsClient, js: JetStreamContext, events: EventPublisher, repo: MemoryRepository,
                  settings: Settings) -> CommandHandler:
    return CommandHandler(nc, js, events, build_services(repo, settings), repo.stored_command,
                          max_deliver=settings.max_deliver, reply_prefixes=settings.reply_subject_prefixes,
                          max_command_bytes=settings.max_command_bytes, tenant_lineages=settings.tenant_lineages)


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
        stack.push_async_callback(close_pool, pool)
        replication_state = await check_replication(pool, settings)
        repo = MemoryRepository(pool, settings.tenant)
        nc = await connection.connect(endpoints.nats_url, settings, stop=stop, closed=closed)
        stack.push_async_callback(connection.drain, nc)
        js = nc.jetstream()
        retention = streams.retention_of(settings)
        # Create or update, never delete: the worker's NATS user may not (memoryctl provision may).
        await streams.provision_for(js, nc, settings, may_delete=False)
        events = await _open_publisher(stack, js, nc)
        tasks = [asyncio.create_task(prune_forever(repo, settings.inbox_retention_days), name="prune"),
                 asyncio.create_task(retention_loop(js, nc, partitions=settings.memory_partitions, retention=retention,
                                                    reply_prefixes=settings.reply_subject_prefixes),
                                     name="command-retention"),
                 asyncio.create_task(watch_replication(pool, replication_state), name="replication-watch")]
        stack.push_async_callback(_cancel, tasks)
        result_lookups = ResultLookups(repo, CommandOutcomes(repo, js, settings.reply_subject_prefixes))
        result_lookups.start()
        stack.push_async_callback(result_lookups.aclose)  # before the pool closes
        lookups = await nc.subscribe(subjects.RESULT_LOOKUP_SUBJECTS, queue="memory-worker", cb=result_lookups.on_lookup)
        consumers = await _start_consumers(stack, nc, js, events, repo, settings)
        if settings.metrics_port:
            # Serving starts only now, with the consumers bound: ready while connected and not stopping.
            http = await metrics.serve_http(settings.metrics_host, settings.metrics_port,
                                            healthy=lambda: nc.is_connected and not stop.is_set() and not closed.is_set())
            stack.push_async_callback(_close_server, http)
        collector.settle_after_start()
        metrics.READY.set(1)
        log.info("worker_ready", partitions=settings.memory_partitions, nats=endpoints.nats_url)
        if ready is not None:
            ready.set()
        await stop.wait()
        await _stop_taking_work(lookups, consumers, CLOSED_STOP_S if closed.is_set() else float(settings.ack_wait_seconds))
    if closed.is_set():
        raise NatsConnectionClosed("the NATS connection was closed and cannot be reconnected")
    log.info("worker_stopped")


async def _open_publisher(stack: contextlib.AsyncExitStack, js: JetStreamContext, nc: NatsClient) -> EventPublisher:
    # Atomic batches only where the stream takes them (nats-server 2.12+ with allow_atomic):
    # elsewhere the batch headers would be ignored and the messages stored one by one.
    atomic = bool((await js.stream_info(subjects.EVENTS_STREAM)).config.allow_atomic)
    if not atomic:
        log.warning("atomic_publish_unavailable", stream=subjects.EVENTS_STREAM,
                    note="events are published command by command")
    events = EventPublisher(js, nc=nc if atomic else None)
    stack.push_async_callback(events.stop)
    return events


async def _start_consumers(stack: contextlib.AsyncExitStack, nc: NatsClient, js: JetStreamContext,
                           events: EventPublisher, repo: MemoryRepository, settings: Settings) -> PartitionConsumers:
    handler = build_handler(nc, js, events, repo, settings)
    stack.push_async_callback(handler.aclose, float(settings.ack_wait_seconds))
    consumers = PartitionConsumers(js, nc, handler, settings.memory_partitions,
                                   in_flight=settings.partition_in_flight, ack_wait_s=float(settings.ack_wait_seconds))
    # On the stack too: should anything below fail, the loops stop before the publisher and pool close.
    stack.push_async_callback(consumers.stop, float(settings.ack_wait_seconds))
    await consumers.start()
    return consumers


async def _stop_taking_work(lookups: Subscription, consumers: PartitionConsumers, timeout: float) -> None:
    """First stop taking work and let the commands in hand finish (they still need the
    publisher and the pool); the exit stack then stops the publisher and closes the pool. The
    timeout is long enough for a command in hand (statement and lock timeouts plus publishing),
    short with the connection closed: nothing can be settled, and it is redelivered anyway."""
    log.info("worker_stopping")
    metrics.READY.set(0)
    with contextlib.suppress(Exception):  # a closed connection has no subscriptions left
        await lookups.unsubscribe()
    await consumers.stop(timeout=timeout)


async def _close_server(server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
