"""Streams and consumers, created or updated explicitly at start-up.

nats-py binds to an existing durable without applying changed settings, so every setting
the worker relies on for order and redelivery is (re)applied here, not left to a subscribe
call.

`MEMORY_COMMANDS` keeps commands by limits, not as a work queue: on a work-queue stream every
acknowledgement deletes its message, a durable write per command with `sync_interval:
always`. Here an acknowledgement only moves the consumer's floor, and the worker removes what
every consumer has acknowledged in bulk (worker/consuming/administration/retention.py). The age and size
limits are the outage the stream rides out; past the size limit a publish is refused
(discard new), never an unapplied command dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import structlog
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
    SubjectTransform,
)
from nats.js.errors import APIError, NotFoundError

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from worker.consuming.administration import stream_upgrade
from worker.shared import jetstream
from worker.shared.settings import Settings

log = structlog.get_logger("worker")

COMMAND_SUBJECTS = [subjects.command_filter(kind) for kind in COMMAND_KINDS]
EVENT_SUBJECTS = list(subjects.EVENT_SUBJECTS)
DUPLICATE_WINDOW_S = 600.0


@dataclass(frozen=True, slots=True)
class CommandRetention:
    """How long and how much of an unconsumed backlog MEMORY_COMMANDS keeps (COMMAND_MAX_AGE_HOURS,
    COMMAND_MAX_MIB): longer and larger than any outage of the workers the operator plans for."""

    max_age_s: float = 7 * 24 * 3600.0
    max_bytes: int = 1024**3


def command_stream(partitions: int, replicas: int = 1, retention: CommandRetention = CommandRetention()) -> StreamConfig:
    src, dest = subjects.partition_transform(partitions)
    return StreamConfig(
        name=subjects.COMMANDS_STREAM,
        subjects=COMMAND_SUBJECTS,
        subject_transform=SubjectTransform(src=src, dest=dest),
        retention=RetentionPolicy.LIMITS,
        max_age=retention.max_age_s,
        max_bytes=retention.max_bytes,
        # Full: the bot's publish is refused (it knows, and can retry); never drop the oldest,
        # which may not be applied yet.
        discard=DiscardPolicy.NEW,
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        num_replicas=replicas,
        max_msg_size=1024 * 1024,
        # Bots may publish commands in atomic batches (worker/client/memory_client.py): one flush for many.
        allow_atomic=True,
    )


def events_stream(replicas: int = 1) -> StreamConfig:
    return StreamConfig(
        name=subjects.EVENTS_STREAM,
        subjects=EVENT_SUBJECTS,
        # Limits, never work queue: bots, cache nodes, sinks and operators each read it.
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        max_age=7 * 24 * 3600.0,
        discard=DiscardPolicy.OLD,
        # The events of creates saved together go out as one atomic batch (worker/consuming/events/publisher.py).
        allow_atomic=True,
        num_replicas=replicas,
    )


def dlq_stream(replicas: int = 1) -> StreamConfig:
    return StreamConfig(
        name=subjects.DLQ_STREAM,
        subjects=[subjects.DLQ_FILTER],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        max_age=30 * 24 * 3600.0,
        num_replicas=replicas,
    )


def partition_consumer_name(partition: int) -> str:
    return f"memory-worker-p{partition}"


# The priority group every pull on a partition consumer names (worker/consuming/intake/partition.py).
PARTITION_GROUP = "memory"
# A replica that has not pulled for this long loses its partition to another (pinned_client).
# It pulls at least every partition.PULL_EXPIRES_S while alive.
PIN_TIMEOUT_S = 10.0
DEFAULT_IN_FLIGHT = 32


# What the partition mapping leaves where it was published (a literal wildcard as workspace
# token: memory.create.* is stored as memory.create.*): no partition consumer's filter matches
# it, so this consumer takes it, and the worker dead-letters it. Every stored command leaves.
UNPLACED_CONSUMER = "memory-worker-unplaced"
UNPLACED_FILTER = subjects.ALL_COMMANDS


def command_consumers(partitions: int) -> list[tuple[str, str]]:
    """(durable name, filter) of every consumer of MEMORY_COMMANDS: the partitions, then the unplaced."""
    return [(partition_consumer_name(p), subjects.partition_filter(p)) for p in range(partitions)] + [
        (UNPLACED_CONSUMER, UNPLACED_FILTER)]


def partition_consumer(partition: int | None, *, ack_wait_s: float, replicas: int = 1,
                       in_flight: int = DEFAULT_IN_FLIGHT) -> ConsumerConfig:
    """The consumer of one partition, or with partition None the unplaced commands' consumer."""
    return ConsumerConfig(
        durable_name=UNPLACED_CONSUMER if partition is None else partition_consumer_name(partition),
        filter_subject=UNPLACED_FILTER if partition is None else subjects.partition_filter(partition),
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        # Up to this many commands of the partition in the hands of its one pinned replica,
        # which runs each workspace's commands one at a time, in order (worker/consuming/intake/partition.py).
        max_ack_pending=in_flight,
        ack_wait=ack_wait_s,
        # Unlimited: the worker counts deliveries and dead-letters at MAX_DELIVER itself. A
        # server-side limit would drop a message whose dead-lettering failed, unacknowledged.
        max_deliver=-1,
        max_waiting=512,
        num_replicas=replicas,
    )


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    try:
        await js.stream_info(jetstream.config_name(config.name, "stream"))
    except NotFoundError:
        await js.add_stream(config)
        return
    await js.update_stream(config)


def partition_api(verb: str, partition_consumer: str, *, domain: str | None = None) -> str:
    """The JetStream API subject of `verb` (CONSUMER.CREATE, CONSUMER.MSG.NEXT, CONSUMER.UNPIN)
    on a partition consumer (worker/shared/jetstream.py: nats-py has no priority-group calls)."""
    return jetstream.api_subject(jetstream.api_prefix(domain), verb, subjects.COMMANDS_STREAM, partition_consumer)


class StreamProvisionError(RuntimeError):
    """The server refused a stream's settings; the message says which setting to change."""


# "insufficient storage resources available", "no suitable peers for placement, insufficient storage"
_NO_STORAGE = (10047, 10005)


class ConsumerProvisionError(RuntimeError):
    """The server refused a consumer's settings; the message is the server's."""


async def ensure_partition_consumer(nc: NatsClient, config: ConsumerConfig, *,
                                    pin_timeout_s: float = PIN_TIMEOUT_S, domain: str | None = None) -> None:
    """Create or update a partition consumer as a pinned_client priority group (nats-server
    2.11+): the server hands the partition to one replica at a time and moves it only after
    that replica stopped pulling for PIN_TIMEOUT_S. nats-py's ConsumerConfig has no priority
    fields, so this is the JetStream API request itself."""
    request = jetstream.priority_consumer_request(subjects.COMMANDS_STREAM, config.as_dict(), group=PARTITION_GROUP,
                                                  timeout_s=pin_timeout_s)
    durable = jetstream.config_name(config.durable_name, "consumer")
    reply = await nc.request(partition_api("CONSUMER.CREATE", durable, domain=domain), request, timeout=10)
    answer = json.loads(reply.data)
    if "error" in answer:
        raise ConsumerProvisionError(f"consumer {config.durable_name}: {answer['error'].get('description')}")
    stored = answer.get("config", {})
    if stored.get("priority_policy") != "pinned_client" or stored.get("priority_groups") != [PARTITION_GROUP]:
        # A server before 2.11 ignores the fields: with several commands in hand and no pin,
        # two replicas could run one workspace's commands out of order. Refuse to start.
        raise ConsumerProvisionError(
            f"consumer {config.durable_name}: the server did not keep the pinned_client priority group "
            "(nats-server 2.11 or later is needed)")


# A bot's own events consumers, for the bot the worker serves (TENANT). Created here, as pull
# consumers, before the bot connects: the bot only binds to them (deploy/nats/accounts.conf gives
# it info, next and ack, no create, update or delete: a create right alone would let it have
# events pushed, since an update setting inactive_threshold has the server delete the consumer
# and the same right makes it again as a push one). Their replicas are the stream's
# (num_replicas unset).
def bot_consumers(tenant: str) -> list[ConsumerConfig]:
    return [ConsumerConfig(name=name, durable_name=name, filter_subject=subject, deliver_policy=DeliverPolicy.NEW,
                           ack_policy=AckPolicy.EXPLICIT)
            for name, subject in ((f"bot-{tenant}-saved", subjects.SAVED_FILTER),
                                  (f"bot-{tenant}-evicted", subjects.EVICTED_FILTER))]


class ProvisionNeeded(RuntimeError):
    """A step only the provisioning user may take (a delete) is needed: `memoryctl provision`."""


# The worker's own NATS user may not delete a stream or a consumer (deploy/nats/permissions-worker.conf,
# issue 35): what needs a delete is `memoryctl provision`'s, run as the account's provisioning user.
_RUN_PROVISION = ("run `memoryctl provision` as the account's provisioning user (memory-admin; deploy/README.md, "
                  "\"Who may do what\"), then start the workers again")


async def ensure_bot_consumers(js: JetStreamContext, tenant: str, *, may_delete: bool = True) -> None:
    for config in bot_consumers(tenant):
        name = jetstream.config_name(config.name, "consumer")
        try:
            info = await js.consumer_info(subjects.EVENTS_STREAM, name)
        except NotFoundError:
            await js.add_consumer(subjects.EVENTS_STREAM, config)
            continue
        if info.config.deliver_subject:
            # Made push by a user with consumer rights (never a bot): it must never push
            # anywhere, so it starts over as pull.
            log.warning("bot_consumer_was_push", consumer=name, deliver_subject=info.config.deliver_subject)
            if not may_delete:
                raise ProvisionNeeded(f"the bot's consumer {name} of {subjects.EVENTS_STREAM} was made a push "
                                      f"consumer (delivering to {info.config.deliver_subject!r}); making it pull "
                                      f"again deletes it: {_RUN_PROVISION}")
            await js.delete_consumer(subjects.EVENTS_STREAM, name)
            await js.add_consumer(subjects.EVENTS_STREAM, config)
        # Otherwise it is as made (the bot cannot change it): its position is the bot's.


async def provision(js: JetStreamContext, nc: NatsClient, *, partitions: int, ack_wait_s: float, replicas: int = 1,
                    in_flight: int = DEFAULT_IN_FLIGHT, pin_timeout_s: float = PIN_TIMEOUT_S,
                    retention: CommandRetention = CommandRetention(), tenant: str = "",
                    may_delete: bool = True) -> None:
    """Create or update the streams and consumers. With may_delete False (the worker's start),
    a step that deletes (the rebuild of a work-queue MEMORY_COMMANDS, a bot consumer made push)
    raises ProvisionNeeded instead: the worker's user may not delete."""
    await ensure_stream(js, events_stream(replicas))
    if tenant:
        await ensure_bot_consumers(js, tenant, may_delete=may_delete)
    await ensure_stream(js, dlq_stream(replicas))
    commands = command_stream(partitions, replicas, retention)
    if not may_delete and await stream_upgrade.pending(js, commands):
        raise ProvisionNeeded(f"{subjects.COMMANDS_STREAM} is a work-queue stream of an older release (or its "
                              f"rebuild was interrupted); rebuilding it deletes it: {_RUN_PROVISION}")
    try:
        # A deployment from before limits retention: its work-queue stream cannot be changed
        # in place (and the upgrade may dead-letter, so it comes after MEMORY_DLQ).
        await stream_upgrade.to_limits(js, commands, max_payload=nc.max_payload)
        await ensure_stream(js, commands)
    except APIError as exc:
        if exc.err_code not in _NO_STORAGE:
            raise
        raise StreamProvisionError(
            f"{subjects.COMMANDS_STREAM} reserves its size limit, COMMAND_MAX_MIB="
            f"{retention.max_bytes // (1024 * 1024)}, on every replica's JetStream file storage, and the server "
            f"refused: {exc.description!r}. Lower COMMAND_MAX_MIB, or give JetStream more storage "
            "(max_file_store in the server's jetstream block, or a larger volume)") from exc
    for partition in [*range(partitions), None]:
        await ensure_partition_consumer(nc, partition_consumer(partition, ack_wait_s=ack_wait_s, replicas=replicas,
                                                               in_flight=in_flight), pin_timeout_s=pin_timeout_s)


async def provision_for(js: JetStreamContext, nc: NatsClient, settings: Settings, *, may_delete: bool) -> None:
    """provision() with a worker's settings: what `memoryctl run` and `memoryctl provision` both do."""
    await provision(js, nc, partitions=settings.memory_partitions, ack_wait_s=settings.ack_wait_seconds,
                    replicas=settings.stream_replicas, in_flight=settings.partition_in_flight,
                    retention=retention_of(settings), tenant=settings.tenant, may_delete=may_delete)


def retention_of(settings: Settings) -> CommandRetention:
    return CommandRetention(max_age_s=settings.command_max_age_hours * 3600.0,
                            max_bytes=settings.command_max_mib * 1024 * 1024)
