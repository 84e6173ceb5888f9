"""The durable pull loop both sinks share: fetch, validate, store, settle."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from worker.sinks.metrics import METRICS_FILTER, _event_id


class _Sink:
    kind = "sink"

    def __init__(self, *, durable: str, stream: str, batch: int, fetch_timeout: float, ack_wait: float,
                 max_ack_pending: int, logger: Any | None) -> None:
        self.durable = durable
        self.stream = stream
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

    async def _bind(self, js: JetStreamContext) -> JetStreamContext.PullSubscription:
        # Create or update with the full config: nats-py would bind to a drifted durable as is.
        await js.add_consumer(self.stream, self.consumer_config())
        return await js.pull_subscribe_bind(durable=self.durable, stream=self.stream)

    async def _open(self) -> None:
        pass

    async def _close(self) -> None:
        pass

    async def handle(self, msgs: list[Msg]) -> None:
        raise NotImplementedError

    def _reject(self, msg: Msg, reason: str) -> None:
        self.log.warning("metric_rejected", subject=msg.subject, event_id=_event_id(msg), reason=reason)

    async def run(self, js: JetStreamContext, stop: asyncio.Event) -> None:
        """Consume until `stop` is set; a batch in hand is finished first."""
        await self._open()
        sub = None
        failing = False
        try:
            self.log.info("metric_sink_started", stream=self.stream, filter=METRICS_FILTER)
            while not stop.is_set():
                try:
                    if sub is None:
                        sub = await self._bind(js)
                    msgs = await sub.fetch(self.batch, timeout=self.fetch_timeout)
                except TimeoutError:  # nats.errors.TimeoutError too: nothing to do right now
                    continue
                except Exception as exc:  # disconnected, consumer deleted, stream missing ...
                    if not failing:
                        self.log.warning("metric_sink_fetch_failed", error=repr(exc))
                        failing = True
                    if sub is not None:
                        with contextlib.suppress(Exception):
                            await sub.unsubscribe()
                        sub = None
                    await _sleep_or_stop(stop, 1.0)
                    continue
                if failing:
                    self.log.info("metric_sink_fetch_recovered")
                    failing = False
                try:
                    await self.handle(msgs)
                except Exception as exc:  # never die on a batch: unacked messages come back
                    self.log.error("metric_sink_batch_failed", error=repr(exc), messages=len(msgs))
        finally:
            if sub is not None:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
            await self._close()
            self.log.info("metric_sink_stopped")


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)



def _delay(msg: Msg, base: float, cap: float) -> float:
    try:
        deliveries = msg.metadata.num_delivered
    except Exception:
        deliveries = 1
    return min(cap, base * 2 ** min(max(deliveries - 1, 0), 16))


async def _nak(msg: Msg, delay: float) -> None:
    with contextlib.suppress(Exception):  # a lost nak only means redelivery after ack_wait
        await msg.nak(delay=delay)


# --------------------------------------------------------------------------------------------
