"""The command handler: decode, run the service, publish events, reply, acknowledge.

Thin on purpose: rules live in worker/domain, persistence in the services and db/. This
module owns the delivery decisions (ack, nack with delay, dead letter) and the one
canonical log line per command.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import subjects
from contracts.codec import encode
from contracts.commands import COMMAND_TYPES, decoder_for
from contracts.results import COMMAND_INVALID, SAVED_WITH_EVICTION
from worker.consuming import dead_letters, delivery, metrics
from worker.consuming.delivery import retry_delay
from worker.consuming.failures import is_permanent, is_unavailable
from worker.consuming.outbox import OutboxPublisher
from worker.consuming.probe import answerable
from worker.domain import messages, tenancy
from worker.services.base import CommandService, Handled
from worker.shared.settings import DEFAULT_REPLY_PREFIXES

log = structlog.get_logger("worker")

StoredResult = Callable[[str, str], Awaitable[bytes | None]]


# Every result, whatever its command, has data.status: enough for the canonical log line.
class _Status(msgspec.Struct, frozen=True):
    status: str = "?"
    scope: str | None = None


class _StatusProbe(msgspec.Struct):
    data: _Status = _Status()


_STATUS = msgspec.json.Decoder(_StatusProbe)


@dataclass(frozen=True, slots=True)
class Invalid:
    reason: str
    code: str = dead_letters.INVALID_COMMAND


@dataclass(slots=True)
class _FailureRecord:
    first_failed_at: datetime
    waited_out: int = 0  # deliveries that failed only because a dependency was away


class FailureLedger:
    """Per failing message (by stream sequence): when it first failed, for
    Dlq-First-Failed-At, and how many of its deliveries were spent waiting out an outage,
    which do not count toward MAX_DELIVER. Bounded and in memory: after a worker restart the
    first failure this process saw stands in, and earlier outages count (erring towards
    dead-lettering a little early, never towards retrying forever)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._records: dict[int, _FailureRecord] = {}
        self._limit = limit

    def note(self, seq: int, *, unavailable: bool) -> _FailureRecord:
        record = self._records.get(seq)
        if record is None:
            if len(self._records) >= self._limit:
                self._records.pop(next(iter(self._records)))
            record = self._records[seq] = _FailureRecord(datetime.now(UTC))
        if unavailable:
            record.waited_out += 1
        return record

    def counted_deliveries(self, seq: int, deliveries: int) -> int:
        record = self._records.get(seq)
        return deliveries - record.waited_out if record else deliveries

    def forget(self, seq: int) -> None:
        self._records.pop(seq, None)


class CommandHandler:
    def __init__(self, nc: NatsClient, js: JetStreamContext, outbox: OutboxPublisher,
                 services: Mapping[str, CommandService], stored_result: StoredResult, *, max_deliver: int,
                 reply_prefixes: tuple[str, ...], max_command_bytes: int = 65536,
                 tenant_lineages: frozenset[int] | None = None) -> None:
        self._conn = nc
        self._js = js
        self._outbox = outbox
        missing = sorted(set(COMMAND_TYPES) - set(services))
        if missing:  # every kind the decoder accepts has a service: no delivery finds none
            raise ValueError(f"no service for the command kinds {missing}")
        self._services = services
        self._stored_result = stored_result
        # Enforced here, not by the consumer (whose max_deliver is unlimited): a message whose
        # dead-lettering fails must be delivered again, never dropped by the server.
        self._max_deliver = max_deliver
        self._reply_prefixes = reply_prefixes
        self._max_command_bytes = max_command_bytes
        self._tenant_lineages = tenant_lineages
        self._failures = FailureLedger()

    async def aclose(self, timeout: float) -> None:
        """Let work the services still have in the database finish (batches of creates)."""
        for service in self._services.values():
            close = getattr(service, "aclose", None)
            if close is not None:
                await close(timeout)

    async def __call__(self, msg: Msg) -> bool:
        """Settle one delivery. True when it went back to the server for a later attempt (a
        nak): the partition then holds the workspace's later commands until it returns."""
        started = time.perf_counter()
        deliveries = msg.metadata.num_delivered if msg.metadata else 1
        placed = msg.subject.startswith(subjects.PARTITIONED_PREFIX + ".")
        if placed:
            kind, token = subjects.parse_partitioned(msg.subject)
            original = subjects.original_subject(kind, token)
        else:  # stored as published: the partition mapping could not file it (worker/consuming/streams.py)
            original, kind, token = msg.subject, kind_of(msg.subject), ""
        bound = log.bind(kind=kind, subject=original, deliveries=deliveries, queued_ms=_queued_ms(msg))

        if not placed:
            decoded = Invalid(f"the subject {original!r} names no workspace the partitions can place "
                              "(a literal wildcard token; ids in subjects are percent-encoded, docs/design.md, section 3.1)")
        elif len(msg.data) > self._max_command_bytes:
            decoded = Invalid(f"the command is {len(msg.data)} bytes, over the limit of {self._max_command_bytes}")
        else:
            decoded = self._decode(kind, token, msg.data, self._reply_prefixes, self._tenant_lineages)
        if isinstance(decoded, Invalid):
            return await self._reject_invalid(msg, original, decoded, bound, started)
        service = self._services[kind]  # _decode accepts only COMMAND_TYPES, each with a service

        bound = bound.bind(command_id=decoded.command_id, workspace=decoded.workspace_id)
        # Deliveries this process spent waiting out an outage are not the command's doing.
        poison = delivery.before_running(self._failures.counted_deliveries(_seq(msg), deliveries), self._max_deliver)
        if poison is not None:
            return await self._give_up(msg, original, decoded, service, RuntimeError(
                f"delivered {deliveries} times without completing (worker crash or hang?)"), deliveries,
                poison, first_failed_at=None, bound=bound, started=started)
        try:
            running = time.perf_counter()
            handled: Handled = await service.run(decoded)
            applied = time.perf_counter()
            await self._outbox.publish_coalesced(handled.events)
            published = time.perf_counter()
            if decoded.reply_to:
                await self._conn.publish(decoded.reply_to, handled.result)
            await msg.ack()
        except Exception as exc:
            return await self._failed(msg, original, decoded, service, exc, deliveries, bound, started)
        if deliveries > 1:
            self._failures.forget(_seq(msg))
        data = _STATUS.decode(handled.result).data
        metrics.observe(kind, data.status, time.perf_counter() - started, deliveries, handled.duplicate,
                        data.scope if data.status == SAVED_WITH_EVICTION else None)
        # Where the time went: the service (its database round trips and the planning between
        # them, with any wait for a batch shared with other commands), then storing the events
        # (with any wait for a shared atomic batch); decoding, reply, ack and bookkeeping take the rest.
        bound.info("command", status=data.status, duplicate=handled.duplicate, events=len(handled.events),
                   duration_ms=_ms(started), db_ms=_ms(running, applied), events_ms=_ms(applied, published))
        return False

    @staticmethod
    def _decode(kind: str, token: str, data: bytes, reply_prefixes: tuple[str, ...] = DEFAULT_REPLY_PREFIXES,
                tenant_lineages: frozenset[int] | None = None):
        if kind not in COMMAND_TYPES:
            return Invalid(f"{subjects.COMMAND_PREFIX}{kind} is not handled by this worker version",
                           dead_letters.UNSUPPORTED_COMMAND)
        try:
            cmd = decoder_for(kind).decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return Invalid(f"the command could not be decoded: {exc}")
        except RecursionError:
            # Deep nesting (in `Any` fields or skipped unknown fields) exhausts the stack.
            return Invalid("the command could not be decoded: JSON nested too deeply")
        # Hex is case-insensitive (RFC 3986): %2e is %2E. Nothing else may differ.
        if subjects.encode_token(cmd.workspace_id) != subjects.canonical_token(token):
            return Invalid(
                f"workspace_id {cmd.workspace_id!r} does not match the subject's workspace token {token!r}"
            )
        if cmd.reply_to is not None and not cmd.reply_to.startswith(reply_prefixes):
            # The worker publishes results only to reply inboxes, never into event or command subjects.
            return Invalid(f"reply_to must start with one of {', '.join(reply_prefixes)}, got {cmd.reply_to!r}")
        foreign = tenancy.foreign_lineage(cmd, tenant_lineages)
        if foreign is not None:  # another bot's memories: never read or written for this one
            return Invalid(foreign)
        return cmd

    async def _reject_invalid(self, msg: Msg, original: str, invalid: Invalid, bound, started: float) -> bool:
        """Poison never blocks its partition: dead-letter it, answer if we can, move on."""
        reason = invalid.reason
        command_id, reply_to = answerable(msg.data, self._reply_prefixes)
        bound = bound.bind(command_id=command_id)
        try:
            await dead_letters.dead_letter(
                self._js, max_payload=self._conn.max_payload, original_subject=original, payload=msg.data,
                reason=invalid.code, error=reason,
                deliveries=msg.metadata.num_delivered if msg.metadata else 1, stream_seq=_seq(msg),
            )
            if reply_to:
                await self._conn.publish(reply_to, encode(messages.invalid_command(command_id or "", reason)))
            await msg.ack()
        except Exception as exc:
            bound.warning("command_invalid_not_recorded", error=repr(exc))
            await msg.nak(delay=1.0)
            return True
        metrics.DEAD_LETTERS.labels(invalid.code).inc()
        metrics.COMMANDS.labels(kind_of(original), COMMAND_INVALID).inc()
        bound.warning("command", status="memory_command_invalid", reason=reason, duration_ms=_ms(started))
        return False

    async def _failed(self, msg: Msg, original: str, cmd, service: CommandService, exc: Exception,
                      deliveries: int, bound, started: float) -> bool:
        seq = _seq(msg)
        unavailable = is_unavailable(exc)
        counted = self._failures.counted_deliveries(seq, deliveries)
        first_failed_at = self._failures.note(seq, unavailable=unavailable).first_failed_at
        decision = delivery.after_running(failed=True, permanent=is_permanent(exc), unavailable=unavailable,
                                          deliveries=deliveries, counted=counted, max_deliver=self._max_deliver)
        if isinstance(decision, delivery.Retry):
            event = "waiting_for_dependency" if decision.waiting_for_dependency else "command_retry"
            metrics.RETRIES.labels(kind_of(original)).inc()
            bound.warning(event, error=repr(exc), retry_in_s=decision.delay, duration_ms=_ms(started))
            try:
                await msg.nak(delay=decision.delay)
            except Exception as nak_exc:  # the broker is gone too: ack_wait redelivers it
                bound.warning("nak_failed", error=repr(nak_exc))
            return True
        assert isinstance(decision, delivery.GiveUp)
        return await self._give_up(msg, original, cmd, service, exc, deliveries, decision,
                                   first_failed_at=first_failed_at, bound=bound, started=started)

    async def _give_up(self, msg: Msg, original: str, cmd, service: CommandService, exc: Exception,
                       deliveries: int, give_up: delivery.GiveUp, *, first_failed_at: datetime | None, bound,
                       started: float) -> bool:
        seq = _seq(msg)
        try:
            stored = await self._stored_result(cmd.command_id, cmd.workspace_id)
            outcome = delivery.give_up_with(give_up, stored=stored is not None)
            if isinstance(outcome, delivery.DeadLetter):
                await dead_letters.dead_letter(
                    self._js, max_payload=self._conn.max_payload, original_subject=original, payload=msg.data,
                    reason=outcome.reason, error=repr(exc),
                    deliveries=deliveries, first_failed_at=first_failed_at, stream_seq=seq,
                )
            if cmd.reply_to:
                await self._conn.publish(cmd.reply_to, stored if stored is not None else service.failure_result(cmd))
            await msg.ack()
            self._failures.forget(seq)
        except Exception as dlq_exc:
            bound.error("dead_letter_failed", error=repr(dlq_exc), retry_in_s=retry_delay(deliveries))
            await msg.nak(delay=retry_delay(deliveries))
            return True
        status = "answered_from_inbox" if isinstance(outcome, delivery.AnswerStored) else "dead_lettered"
        if isinstance(outcome, delivery.DeadLetter):
            metrics.DEAD_LETTERS.labels(outcome.reason).inc()
        bound.error("command", status=status, error=repr(exc), permanent=give_up.permanent,
                    duration_ms=_ms(started))
        return False


def kind_of(original_subject: str) -> str:
    parts = original_subject.split(".")
    return parts[1] if len(parts) > 1 else "?"


def _seq(msg: Msg) -> int:
    return msg.metadata.sequence.stream if msg.metadata else 0


def _queued_ms(msg: Msg) -> float | None:
    """How long the command waited between being stored in the stream and reaching its handler."""
    if not msg.metadata:
        return None
    return round((time.time() - msg.metadata.timestamp.timestamp()) * 1000, 1)


def _ms(started: float, ended: float | None = None) -> float:
    return round(((time.perf_counter() if ended is None else ended) - started) * 1000, 2)
