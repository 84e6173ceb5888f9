"""JetStream atomic batch publishing (nats-server 2.12+, a stream with `allow_atomic`).

nats-py has no API for it, so this is the protocol by hand: every message carries the batch
id and its place in the batch, the last one also the commit and waits for the answer. The
server stores all of the batch, in order, with one write, or none of it. Used for the
worker's events (worker/consuming/events/publisher.py) and the bot's commands (worker/client/memory_client.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import structlog
from nats.aio.client import Client as NatsClient

log = structlog.get_logger("atomic")

# A batch costs about as much as a few single publishes whatever its size, so a small one is
# slower than its messages sent one by one. Why (strace, nats-server 2.15): the server stages
# each batch in a directory of its own under the stream (batches/<id>/, a small file store:
# files written, fsynced and removed), then stores the messages with one fsync: 4 fsyncs for
# a batch of 3 or of 30, and about 1.1 ms of its kernel CPU, where a single publish costs one
# fsync and about 0.08 ms. In NATS CPU alone a batch pays from about 14 messages; batches
# start at 8 because they also save the publishers' round trips. Measured with
# sync_interval always, for events (batches of 2 slower than single publishes, of 40 about
# three times faster per message) and for commands (4 senders: 1,119-1,246 commands/s in
# batches of 4 or more, 2,518-2,652 one by one; from 8, 2 and 4 senders as fast as one by
# one, 16 senders 1.3-1.4 times and 64 about 3 times as fast; from 32, NATS used less CPU
# at 800 creates/s, 0.63 against 0.71 ms a create, but p50 rose). The server takes at most
# 1,000 messages in one batch.
MIN_MESSAGES = 8
MAX_MESSAGES = 1000


class BatchAck(msgspec.Struct):
    stream: str = ""
    seq: int = 0  # the stream sequence of the batch's last message
    count: int = 0
    error: dict[str, Any] | None = None


_BATCH_ACK = msgspec.json.Decoder(BatchAck)


async def publish_atomic(nc: NatsClient, messages: Sequence[tuple[str, bytes, Mapping[str, str]]], *,
                         timeout: float) -> BatchAck | None:
    """Publish (subject, payload, headers) messages as one atomic batch. The server's answer
    when all of them were stored; None when none was (fewer than MIN_MESSAGES or more than
    MAX_MESSAGES, not worth or not allowed a batch; refused, for instance for a duplicate
    Nats-Msg-Id; no answer in time; a connection error): the caller then publishes them one
    by one, and the duplicate window drops whatever a late commit did store."""
    if not MIN_MESSAGES <= len(messages) <= MAX_MESSAGES:
        return None
    batch_id = uuid.uuid4().hex
    try:
        for sequence, (subject, payload, headers) in enumerate(messages[:-1], 1):
            await nc.publish(subject, payload, headers={
                **headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(sequence)})
        subject, payload, headers = messages[-1]
        reply = await nc.request(subject, payload, timeout=timeout, headers={
            **headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(len(messages)),
            "Nats-Batch-Commit": "1"})
        ack = _BATCH_ACK.decode(reply.data)
    except Exception as exc:
        log.info("atomic_publish_not_stored", messages=len(messages), error=repr(exc))
        return None
    if ack.error is not None or ack.count != len(messages):
        log.info("atomic_publish_not_stored", messages=len(messages), error=ack.error, count=ack.count)
        return None
    return ack
