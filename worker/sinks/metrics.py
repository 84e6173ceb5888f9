"""What the sinks accept under `metrics.>` (see worker/sinks/process.py): the subject, the
payload's shape, the event id."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec
from nats.aio.msg import Msg

from contracts import subjects
from contracts.events import MemoryEvictionMetric

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


# What the sinks accept on `metrics.memory_eviction` is the contract's Struct itself: exactly a
# scope and a whole number of days, nothing else (no content, no ids). Its JSON schema is also
# the payload of the sinks' own AsyncAPI document.
EVICTION_SCHEMA: dict[str, Any] = msgspec.json.schema(MemoryEvictionMetric)["$defs"]["MemoryEvictionMetric"]
# msgspec names a refused enum value in its message; a rejected payload's values are never logged.
_REFUSED_VALUE = re.compile(r"^Invalid enum value .*? - at ")


def _eviction(fields: dict[str, Any]) -> None:
    try:
        msgspec.convert(fields, MemoryEvictionMetric, strict=True)
    except msgspec.ValidationError as exc:
        # Where and what, never the value.
        raise InvalidMetric(f"memory_eviction {_REFUSED_VALUE.sub('Invalid enum value - at ', str(exc))}") from None


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
