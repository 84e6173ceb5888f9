"""Streams and consumers, created or updated explicitly at start-up.

nats-py binds to an existing durable without applying changed settings, so every setting
the worker relies on for order and redelivery is (re)applied here, not left to a subscribe
call.
"""

from __future__ import annotations

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
from nats.js.errors import NotFoundError

from contracts import subjects

COMMAND_SUBJECTS = [f"memory.{kind}.*" for kind in subjects.COMMAND_KINDS]
EVENT_SUBJECTS = ["memory.saved.>", "memory.evicted.>", "memory.removed.>", "cache.invalidate.>", "metrics.>"]
DUPLICATE_WINDOW_S = 600.0


def command_stream(partitions: int, replicas: int = 1) -> StreamConfig:
    src, dest = subjects.partition_transform(partitions)
    return StreamConfig(
        name=subjects.COMMANDS_STREAM,
        subjects=COMMAND_SUBJECTS,
        subject_transform=SubjectTransform(src=src, dest=dest),
        # Work queue: a command is gone once the worker acknowledges it.
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        num_replicas=replicas,
        max_msg_size=1024 * 1024,
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
        # The events of creates saved together go out as one atomic batch (worker/outbox.py).
        allow_atomic=True,
        num_replicas=replicas,
    )


def dlq_stream(replicas: int = 1) -> StreamConfig:
    return StreamConfig(
        name=subjects.DLQ_STREAM,
        subjects=["dlq.>"],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        max_age=30 * 24 * 3600.0,
        num_replicas=replicas,
    )


def partition_consumer_name(partition: int) -> str:
    return f"memory-worker-p{partition}"


def partition_consumer(partition: int, *, ack_wait_s: float, replicas: int = 1) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=partition_consumer_name(partition),
        filter_subject=subjects.partition_filter(partition),
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        # One command in flight per partition: a workspace's commands run one at a time, in order.
        max_ack_pending=1,
        ack_wait=ack_wait_s,
        # Unlimited: the worker counts deliveries and dead-letters at MAX_DELIVER itself. A
        # server-side limit would drop a message whose dead-lettering failed, unacknowledged.
        max_deliver=-1,
        max_waiting=512,
        num_replicas=replicas,
    )


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    try:
        await js.stream_info(config.name)
    except NotFoundError:
        await js.add_stream(config)
        return
    await js.update_stream(config)


async def ensure_consumer(js: JetStreamContext, stream: str, config: ConsumerConfig) -> None:
    # The server's consumer create is create-or-update for a durable name: drifted settings
    # (max_ack_pending, max_deliver, ack_wait ...) are brought back to what the worker needs.
    await js.add_consumer(stream, config)


async def provision(js: JetStreamContext, *, partitions: int, ack_wait_s: float, replicas: int = 1) -> None:
    await ensure_stream(js, command_stream(partitions, replicas))
    await ensure_stream(js, events_stream(replicas))
    await ensure_stream(js, dlq_stream(replicas))
    for partition in range(partitions):
        await ensure_consumer(js, subjects.COMMANDS_STREAM,
                              partition_consumer(partition, ack_wait_s=ack_wait_s, replicas=replicas))
