"""What both sinks share: the settings of their durable pull consumers, the retry delay of a
nak, a rejected metric's log line. The pull loop itself is FastStream's (worker/sinks/app.py)."""

from __future__ import annotations

import contextlib
from typing import Any

import structlog
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.subjects import EVENTS_STREAM
from worker.shared.jetstream import is_delivery_of
from worker.sinks.metrics import METRICS_FILTER, _event_id


class _Sink:
    kind = "sink"

    def __init__(self, *, durable: str, batch: int, fetch_timeout: float, ack_wait: float,
                 max_ack_pending: int, logger: Any | None) -> None:
        self.durable = durable
        self.batch = batch
        self.fetch_timeout = fetch_timeout
        self.ack_wait = ack_wait
        self.max_ack_pending = max_ack_pending
        self.log = logger if logger is not None else structlog.get_logger("memory.sinks").bind(
            sink=self.kind, consumer=durable)

    def consumer_config(self) -> ConsumerConfig:
        return ConsumerConfig(
            # `name` too: nats-py then uses the create API whose subject carries the filter,
            # which is what a metrics-only user is permitted (deploy/nats/accounts.conf).
            name=self.durable,
            durable_name=self.durable,
            filter_subject=METRICS_FILTER,
            ack_policy=AckPolicy.EXPLICIT,
            # A new sink starts with what the stream still holds (limits retention, 7 days).
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=self.ack_wait,
            # Unlimited: a sink retries until it can record a metric (invalid ones are acked).
            max_deliver=-1,
            max_ack_pending=self.max_ack_pending,
        )

    async def open(self) -> None:
        """What the sink needs before its first batch (the JSON-lines file)."""

    async def close(self) -> None:
        pass

    async def handle(self, msgs: list[Msg]) -> None:
        """Store a batch and settle every message of it; never raises."""
        raise NotImplementedError

    def deliveries(self, msgs: list[Msg]) -> list[Msg]:
        """What of a fetched batch the sink's own consumer delivered: anything else on its inbox
        is neither stored nor settled (settling is a publish to the reply subject it carries)."""
        mine = []
        for msg in msgs:
            if is_delivery_of(msg, EVENTS_STREAM, self.durable):
                mine.append(msg)
            else:
                self.log.warning("metric_sink_foreign_message", subject=msg.subject[:256], reply=(msg.reply or "")[:256])
        return mine

    def _reject(self, msg: Msg, reason: str) -> None:
        self.log.warning("metric_rejected", subject=msg.subject, event_id=_event_id(msg), reason=reason)


def _delay(msg: Msg, base: float, cap: float) -> float:
    try:
        deliveries = msg.metadata.num_delivered
    except Exception:
        deliveries = 1
    return float(min(cap, base * 2 ** min(max(deliveries - 1, 0), 16)))


async def _nak(msg: Msg, delay: float) -> None:
    with contextlib.suppress(Exception):  # a lost nak only means redelivery after ack_wait
        await msg.nak(delay=delay)
