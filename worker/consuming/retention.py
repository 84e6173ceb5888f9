"""MEMORY_COMMANDS kept small: what every consumer acknowledged is removed in bulk, and the
oldest command not yet consumed is watched against the stream's age limit.

The stream has limits retention (worker/consuming/streams.py): an acknowledgement does not
delete its command, so nothing costs a durable write per command. Every few seconds each
consumer's acknowledged commands are purged below its floor, by its own filter: one purge per
consumer, whatever the number of commands, and never a command a consumer has not
acknowledged. A command no filter matches (the 0x7F subjects of worker/consuming/stranded.py)
is not purged either; it stays at the head, where the stranded sweep finds it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StreamState
from nats.js.errors import NotFoundError

from contracts import subjects
from worker.consuming import metrics, stranded, streams
from worker.consuming.background import cancel_requested

log = structlog.get_logger("worker")

RETAIN_EVERY_S = 2.0
# Warn (and alert, deploy/prometheus/alerts.yaml) when the oldest unconsumed command is this
# far into the stream's age limit, or the stream this far into its size limit.
AT_RISK_SHARE = 0.5


def consumed_below(info: ConsumerInfo) -> int:
    """The first stream sequence of the consumer's filter not known to be acknowledged: with
    nothing awaiting an acknowledgement, everything it was delivered is done."""
    delivered = info.delivered.stream_seq if info.delivered else 0
    floor = info.ack_floor.stream_seq if info.ack_floor else 0
    return (delivered if not info.num_ack_pending else floor) + 1


@dataclass(frozen=True, slots=True)
class Backlog:
    unconsumed: int  # waiting plus in a worker's hands, over every consumer
    oldest_age_s: float  # of the oldest command not yet acknowledged; 0 with none
    stream: StreamState  # after the purge

    @property
    def stream_bytes(self) -> int:
        return self.stream.bytes


def at_risk(backlog: Backlog, retention: streams.CommandRetention) -> list[str]:
    """What of the stream's limits the backlog is getting near, in words; empty when neither."""
    near = []
    if backlog.oldest_age_s >= AT_RISK_SHARE * retention.max_age_s:
        near.append(f"the oldest unconsumed command is {backlog.oldest_age_s:.0f}s old; the stream drops "
                    f"commands older than {retention.max_age_s:.0f}s (COMMAND_MAX_AGE_HOURS)")
    if retention.max_bytes > 0 and backlog.stream_bytes >= AT_RISK_SHARE * retention.max_bytes:
        near.append(f"the stream holds {backlog.stream_bytes} bytes of {retention.max_bytes} (COMMAND_MAX_MIB); "
                    "when full, bots' publishes are refused")
    return near


class CommandRetainer:
    def __init__(self, js: JetStreamContext, partitions: int) -> None:
        self._js = js
        self._consumers = streams.command_consumers(partitions)
        self._purged_below: dict[str, int] = {}

    async def retain_once(self) -> Backlog:
        """Purge what each consumer acknowledged; the backlog that remains."""
        now = datetime.now(UTC)
        unconsumed, oldest = 0, 0.0
        for durable, filter_subject in self._consumers:
            try:
                info = await self._js.consumer_info(subjects.COMMANDS_STREAM, durable)
            except NotFoundError:
                continue  # not provisioned yet (a replica starting): nothing of it to remove
            below = consumed_below(info)
            if below > self._purged_below.get(durable, 1):
                await self._js.purge_stream(subjects.COMMANDS_STREAM, subject=filter_subject, seq=below)
                self._purged_below[durable] = below
            unconsumed += info.num_pending + info.num_ack_pending
            if info.num_pending or info.num_ack_pending:
                oldest = max(oldest, await self._age_of_first(filter_subject, below, now))
        state = (await self._js.stream_info(subjects.COMMANDS_STREAM)).state
        return Backlog(unconsumed=unconsumed, oldest_age_s=oldest, stream=state)

    async def _age_of_first(self, filter_subject: str, seq: int, now: datetime) -> float:
        try:
            raw = await self._js.get_msg(subjects.COMMANDS_STREAM, seq, subject=filter_subject, next=True)
        except NotFoundError:
            return 0.0
        return max(0.0, (now - raw.time).total_seconds()) if raw.time else 0.0


async def retain_forever(js: JetStreamContext, nc: NatsClient, *, partitions: int,
                         retention: streams.CommandRetention, reply_prefixes: tuple[str, ...]) -> None:
    retainer = CommandRetainer(js, partitions)
    metrics.COMMANDS_MAX_AGE.set(retention.max_age_s)
    metrics.COMMANDS_MAX_BYTES.set(retention.max_bytes)
    failing, warned = False, False
    while not cancel_requested():
        await asyncio.sleep(RETAIN_EVERY_S)
        try:
            backlog = await retainer.retain_once()
            # After the purge the head is the oldest command left: a stranded one shows there.
            await stranded.sweep_once(js, nc, reply_prefixes, backlog.stream)
            failing = False
        except Exception as exc:  # NATS away: the next round looks again; said once per outage
            if not failing:
                log.warning("command_retention_failed", error=repr(exc))
            failing = True
            continue
        metrics.COMMANDS_UNCONSUMED.set(backlog.unconsumed)
        metrics.COMMANDS_OLDEST_AGE.set(backlog.oldest_age_s)
        metrics.COMMANDS_STREAM_BYTES.set(backlog.stream_bytes)
        near = at_risk(backlog, retention)
        if near and not warned:
            log.warning("command_retention_at_risk", problems=near, unconsumed=backlog.unconsumed)
        warned = bool(near)
