"""What a cache node's consumer is on the wire: its name and configuration on MEMORY_EVENTS,
and the keys an invalidation event names. No state: worker/client/cache_node.py runs it."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts import subjects
from contracts.events import CacheInvalidate
from worker.client.cache_store import Key

INVALIDATE_FILTER = subjects.INVALIDATE_FILTER
CONSUMER_PREFIX = "cache-node-"


def consumer_name(node_name: str) -> str:
    return f"{CONSUMER_PREFIX}{node_name}"


def consumer_config(node_name: str, *, ack_wait: float = 10.0,
                    inactive_threshold: float | None = 24 * 3600.0) -> ConsumerConfig:
    name = consumer_name(node_name)
    return ConsumerConfig(
        name=name,
        durable_name=name,
        filter_subject=INVALIDATE_FILTER,
        # Only applies when the consumer is first created: a node that comes back later
        # resumes where it stopped, so it is delivered what it missed.
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.EXPLICIT,
        # Applying an invalidation is instant; a short ack wait bounds how long a lost
        # delivery stays unapplied before the server redelivers it.
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=10_000,
        # A node that never comes back does not keep its consumer forever. One that comes
        # back after this finds its consumer recreated and flushes.
        inactive_threshold=inactive_threshold,
    )


def parse_invalidation(msg_subject: str, data: bytes) -> tuple[set[Key], dict[str, Any]]:
    """The keys one `cache.invalidate.<cache>.<key>` message names, and fields for the log.

    The subject and the payload both name the key; should they disagree (or one be
    unreadable), both are invalidated. An empty set means nothing readable: flush.
    """
    keys: set[Key] = set()
    fields: dict[str, Any] = {}
    parts = msg_subject.split(".")
    if len(parts) == 4 and parts[0] == "cache" and parts[1] == "invalidate":
        with contextlib.suppress(ValueError):
            keys.add((parts[2], subjects.decode_token(parts[3])))
    try:
        event = msgspec.json.decode(data, type=CacheInvalidate)
    except (msgspec.DecodeError, msgspec.ValidationError):
        fields["payload"] = "unreadable"
    else:
        keys.add((event.cache, event.key))
        fields.update(event_id=event.event_id, command_id=event.command_id, reason=event.reason)
    return keys, fields
