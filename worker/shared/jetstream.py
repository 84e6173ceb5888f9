"""Every JetStream API call written by hand, in one place. nats-py 2.16 has no priority
groups (no pinned consumers, no unpin) and its fetch waits to fill a batch, where the
partitions and the cache node act on each delivery the moment it arrives; so the worker's
partitions (worker/consuming/intake/partition.py, streams.py) and the cache node
(worker/client/cache_consumer.py) send these requests themselves.

The API prefix honours a JetStream domain the way nats-py's own calls do: `$JS.API`, or
`$JS.<domain>.API`."""

from __future__ import annotations

import json
from email.header import Header, decode_header
from typing import Any

from nats.aio.msg import Msg
from nats.js.api import RawStreamMsg

from contracts import subjects

API_PREFIX = "$JS.API"

# Statuses the server answers a pull request with (a message without a reply subject).
HEARTBEAT = "100"
NO_MESSAGES = "404"
REQUEST_TIMEOUT = "408"
PINNED_ELSEWHERE = "423"  # a priority group's pin is another client's


def api_prefix(domain: str | None = None) -> str:
    return f"$JS.{domain}.API" if domain else API_PREFIX


def api_subject(prefix: str, verb: str, stream: str, consumer: str) -> str:
    """`<prefix>.<verb>.<stream>.<consumer>`: CONSUMER.CREATE, CONSUMER.MSG.NEXT, CONSUMER.UNPIN."""
    return f"{prefix}.{verb}.{stream}.{consumer}"


def next_subject(prefix: str, stream: str, consumer: str) -> str:
    return api_subject(prefix, "CONSUMER.MSG.NEXT", stream, consumer)


def pull_request(batch: int, *, expires_s: float | None = None, no_wait: bool = False,
                 group: str | None = None, pin: str | None = None) -> bytes:
    """The body of CONSUMER.MSG.NEXT: up to `batch` deliveries, the pull open `expires_s` at
    the server; in a priority group, with the pin id this client holds, if any."""
    request: dict[str, Any] = {"batch": batch}
    if expires_s:
        request["expires"] = int(expires_s * 1_000_000_000)
    if no_wait:
        request["no_wait"] = True
    if group is not None:
        request["group"] = group
    if pin is not None:
        request["id"] = pin
    return json.dumps(request).encode()


def unpin_request(group: str) -> bytes:
    return json.dumps({"group": group}).encode()


def priority_consumer_request(stream: str, config: dict[str, Any], *, group: str, timeout_s: float) -> bytes:
    """CONSUMER.CREATE of a pinned_client priority group (nats-server 2.11+)."""
    body = dict(config, priority_groups=[group], priority_policy="pinned_client",
                priority_timeout=int(timeout_s * 1_000_000_000))
    return json.dumps({"stream_name": stream, "config": body}).encode()


def pull_status(msg: Msg) -> str | None:
    """The server's status on a pull (HEARTBEAT, NO_MESSAGES ...), None for a delivery."""
    if msg.reply:
        return None
    return (msg.headers or {}).get("Status", "") if msg.headers else ""


def is_delivery_of(msg: Msg, stream: str, consumer: str) -> bool:
    """A message on a reader's inbox that `consumer` of `stream` delivered: its reply is that
    consumer's ack subject (contracts/subjects.py, is_ack_subject). A reader acknowledges on
    nothing else: an ack, nak or progress is a publish to the reply subject the message carries."""
    return subjects.is_ack_subject(msg.reply or "", stream, consumer)


def pull_status_description(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Description")


def stream_seq(msg: Msg) -> int:
    """A delivery's stream sequence: what identifies a command across its deliveries."""
    return msg.metadata.sequence.stream


def stored_seq(raw: RawStreamMsg) -> int:
    """The sequence of a message read from a stream (nats-py types it optional; the server
    always sends it with a stored message)."""
    if raw.seq is None:
        raise ValueError("the server sent a stored message without its sequence")
    return raw.seq


def stored_subject(raw: RawStreamMsg) -> str:
    if raw.subject is None:
        raise ValueError("the server sent a stored message without its subject")
    return raw.subject


def stored_headers(raw: RawStreamMsg) -> dict[str, str]:
    """A stored message's headers as text. nats-py's get_msg parses them with the email parser,
    which gives a header value holding bytes beyond ASCII (a subject a bot chose, an error
    quoting it) as an email Header object, not a str: its bytes are decoded here as UTF-8."""
    return {key: _header_text(value) for key, value in (raw.headers or {}).items()}


def _header_text(value: object) -> str:
    if not isinstance(value, Header):
        return str(value)
    return "".join(part.decode("utf-8", errors="replace") if isinstance(part, bytes) else part
                   for part, _ in decode_header(value))


def config_name(name: str | None, what: str) -> str:
    """The name of a stream or consumer configuration this worker built (nats-py types every
    field optional; one without a name is a bug here, not a server's answer)."""
    if not name:
        raise ValueError(f"a {what} configuration without a name")
    return name
