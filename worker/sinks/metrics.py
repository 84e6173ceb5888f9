"""What the sinks accept under `metrics.>` (see worker/sinks/process.py): the subject, the
payload's shape, the event id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from nats.aio.msg import Msg

from contracts import subjects

METRICS_PREFIX = subjects.METRICS_PREFIX
METRICS_FILTER = subjects.METRICS_FILTER
JSONL_DURABLE = "metrics-sink-jsonl"
POSTGRES_DURABLE = "metrics-sink-postgres"
MAX_GENERIC_FIELDS = 32
MAX_METRIC_BYTES = 4096

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode


class InvalidMetric(ValueError):
    """A metric the sinks will not record (logged and acknowledged, never retried)."""


def _eviction(fields: dict[str, Any]) -> None:
    if set(fields) != {"scope", "decay_days"}:
        raise InvalidMetric(f"memory_eviction must have exactly scope and decay_days, got {sorted(fields)}")
    if fields["scope"] not in ("server", "personal"):
        raise InvalidMetric("memory_eviction scope must be 'server' or 'personal'")
    days = fields["decay_days"]
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise InvalidMetric("memory_eviction decay_days must be a positive integer")


def _generic(fields: dict[str, Any]) -> None:
    if len(fields) > MAX_GENERIC_FIELDS:
        raise InvalidMetric(f"more than {MAX_GENERIC_FIELDS} fields")
    for key, value in fields.items():
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise InvalidMetric(f"field {key!r} is not a scalar")


# One validator per known metric; anything else under metrics.> goes through _generic.
VALIDATORS: dict[str, Callable[[dict[str, Any]], None]] = {
    subjects.METRIC_EVICTION_SUBJECT.removeprefix(METRICS_PREFIX): _eviction,
}


def parse_metric(subject: str, data: bytes) -> tuple[str, dict[str, Any]]:
    """`(name, fields)` of a metric message, or InvalidMetric saying why not."""
    name = subject.removeprefix(METRICS_PREFIX)
    if not subject.startswith(METRICS_PREFIX) or not name:
        raise InvalidMetric(f"not a metrics subject: {subject!r}")
    if len(data) > MAX_METRIC_BYTES:
        raise InvalidMetric(f"payload over {MAX_METRIC_BYTES} bytes")
    try:
        fields = _decode(data)
    except msgspec.DecodeError:
        raise InvalidMetric("payload is not JSON") from None
    if not isinstance(fields, dict):
        raise InvalidMetric("payload is not a JSON object")
    VALIDATORS.get(name, _generic)(fields)
    return name, fields


def _event_id(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Nats-Msg-Id") or None
