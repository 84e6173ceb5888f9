"""JetStream atomic batch publishing (nats-server 2.12+, a stream with `allow_atomic`).

nats-py has no API for it, so this is the protocol by hand: every message carries the batch
id and its place in the batch, the last one also the commit and waits for the answer. The
server stores all of the batch, in order, with one write, or none of it. Used for the
worker's events (worker/outbox.py) and the bot's commands (worker/client.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

import msgspec
import structlog
from nats.aio.client import Client as NatsClient

log = structlog.get_logger("atomic")


class BatchAck(msgspec.Struct):
    stream: str = ""
    seq: int = 0  # the stream sequence of the batch's last message
    count: int = 0
    error: dict | None = None


_BATCH_ACK = msgspec.json.Decoder(BatchAck)


async def publish_atomic(nc: NatsClient, messages: Sequence[tuple[str, bytes, Mapping[str, str]]], *,
                         timeout: float) -> BatchAck | None:
    """Publish (subject, payload, headers) messages as one atomic batch. The server's answer
    when all of them were stored; None when none was (refused, for instance for a duplicate
    Nats-Msg-Id; no answer in time; a connection error): the caller then publishes them one
    by one, and the duplicate window drops whatever a late commit did store."""
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
