"""The command handler: decode, run the service, publish events, reply, acknowledge (in that
order: a command is acknowledged only once its events are stored), and the
one canonical log line per command. Thin on purpose: rules live in worker/domain, persistence
in the services and db/, and what becomes of a delivery (ack, nak with a delay, dead letter,
the stored answer) is decided in worker/consuming/intake/delivery.py; this module carries the
decisions out, each failure path with the one `_Delivery` it settles."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import subjects
from contracts.codec import encode
from contracts.envelope import Envelope
from contracts.registry import COMMAND_TYPES, decoder_for
from contracts.result_parts import COMMAND_INVALID
from contracts.subjects import DEFAULT_REPLY_PREFIXES
from db.inbox import StoredInboxRow
from worker.consuming import dead_letters, metrics
from worker.consuming.events.publisher import EventPublisher
from worker.consuming.intake import delivery
from worker.consuming.intake.delivery import retry_delay as retry_delay
from worker.consuming.intake.failures import FailureLedger, is_permanent, is_unavailable
from worker.consuming.probe import answerable
from worker.domain import tenancy
from worker.kinds.create import texts
from worker.services.base import CommandService, Handled
from worker.services.stored import answer, published_events, republishes
from worker.shared.jetstream import stream_seq

log = structlog.get_logger("worker")

# A command of a workspace as stored (MemoryRepository.stored_command).
StoredLookup = Callable[[str, str], Awaitable[StoredInboxRow | None]]


@dataclass(frozen=True, slots=True)
class Invalid:
    reason: str
    code: str = dead_letters.INVALID_COMMAND


@dataclass(slots=True)
class _Delivery:
    """One delivery being settled: what its log lines, dead letter and hand-back need."""

    msg: Msg
    subject: subjects.CommandSubject
    deliveries: int
    seq: int
    started: float
    context: dict[str, Any]  # what every log line of the delivery says, more as the command is read

    @property
    def kind(self) -> str:
        return self.subject.kind

    @property
    def log(self) -> Any:
        """A logger bound with the context (the failure paths); the success path's one line
        passes the context itself, binding nothing."""
        return log.bind(**self.context)


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A decoded command and the service that runs it."""

    cmd: Envelope
    service: CommandService[Any]


class CommandHandler:
    def __init__(self, nc: NatsClient, js: JetStreamContext, events: EventPublisher,
                 services: Mapping[str, CommandService[Any]], stored_command: StoredLookup, *, max_deliver: int,
                 reply_prefixes: tuple[str, ...], max_command_bytes: int = 65536,
                 tenant_lineages: frozenset[int] | None = None) -> None:
        self._conn = nc
        self._js = js
        self._events = events
        missing = sorted(set(COMMAND_TYPES) - set(services))
        if missing:  # every kind the decoder accepts has a service: no delivery finds none
            raise ValueError(f"no service for the command kinds {missing}")
        self._services = services
        self._stored_command = stored_command
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
        subject = subjects.parse_stored(msg.subject)
        deliveries = msg.metadata.num_delivered
        d = _Delivery(msg, subject, deliveries, stream_seq(msg), started,
                      {"kind": subject.kind, "subject": subject.original, "deliveries": deliveries,
                       "queued_ms": _queued_ms(msg)})
        decoded = self._admit(d)
        if isinstance(decoded, Invalid):
            return await self._reject_invalid(d, decoded)
        command = _Decoded(decoded, self._services[subject.kind])  # _decode admits only COMMAND_TYPES
        d.context.update(command_id=decoded.command_id, workspace=decoded.workspace_id)
        # Deliveries this process spent waiting out an outage are not the command's doing.
        poison = delivery.before_running(self._failures.counted_deliveries(d.seq, deliveries), self._max_deliver)
        if poison is not None:
            return await self._give_up(d, command, RuntimeError(
                f"delivered {deliveries} times without completing (worker crash or hang?)"), poison, None)
        handled: Handled | None = None
        events_stored = False
        try:
            running = time.perf_counter()
            handled = await command.service.run(decoded, d.seq)
            applied = time.perf_counter()
            await self._events.publish_coalesced(handled.events)
            published, events_stored = time.perf_counter(), True
            if decoded.reply_to:
                await self._conn.publish(decoded.reply_to, handled.answer.result)
            await msg.ack()
        except Exception as exc:
            if handled is not None and handled.events and not events_stored:
                # Committed, events not stored: the redelivery of this message publishes them.
                metrics.EVENTS_NOT_STORED.inc()
                d.context["events_not_stored"] = len(handled.events)
            return await self._failed(d, command, exc)
        if deliveries > 1:
            self._failures.forget(d.seq)
        status = handled.answer.status
        metrics.observe(subject.kind, status, time.perf_counter() - started, deliveries, handled.duplicate,
                        handled.answer, dry=handled.dry)
        # Where the time went: the service (its database round trips and the planning between
        # them, with any wait for a batch shared with other commands), then storing the events
        # (with any wait for a shared atomic batch); decoding, reply, ack and bookkeeping take the rest.
        log.info("command", **{**d.context, "status": status, "duplicate": handled.duplicate, "dry_run": handled.dry,
                               "events": len(handled.events), "duration_ms": _ms(started),
                               "db_ms": _ms(running, applied), "events_ms": _ms(applied, published)})
        return False

    def _admit(self, d: _Delivery) -> Envelope | Invalid:
        if not d.subject.placed:  # stored as published: the partition mapping could not file it
            return Invalid(f"the subject {d.subject.original!r} names no workspace the partitions can place "
                           "(a literal wildcard token; ids in subjects are percent-encoded, docs/design.md, section 3.1)")
        if len(d.msg.data) > self._max_command_bytes:
            return Invalid(f"the command is {len(d.msg.data)} bytes, over the limit of {self._max_command_bytes}")
        return self._decode(d.subject.kind, d.subject.workspace_token, d.msg.data, self._reply_prefixes,
                            self._tenant_lineages)

    @staticmethod
    def _decode(kind: str, token: str, data: bytes, reply_prefixes: tuple[str, ...] = DEFAULT_REPLY_PREFIXES,
                tenant_lineages: frozenset[int] | None = None) -> Envelope | Invalid:
        if kind not in COMMAND_TYPES:
            return Invalid(f"{subjects.COMMAND_PREFIX}{kind} is not handled by this worker version",
                           dead_letters.UNSUPPORTED_COMMAND)
        try:
            cmd: Envelope = decoder_for(kind).decode(data)
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
        if cmd.reply_to is not None and not subjects.may_answer(cmd.reply_to, reply_prefixes):
            # The worker publishes results only to reply inboxes, never into event or command subjects.
            return Invalid(f"reply_to must start with one of {', '.join(reply_prefixes)}, got {cmd.reply_to!r}")
        foreign = tenancy.foreign_lineage(cmd, tenant_lineages)
        if foreign is not None:  # another bot's memories: never read or written for this one
            return Invalid(foreign)
        return cmd

    async def _hand_back(self, d: _Delivery, retry: delivery.Retry) -> bool:
        """The nak of every failure path: a broker gone too is logged, not raised (ack_wait
        redelivers the command then), so it never shows as a handler crash."""
        try:
            await d.msg.nak(delay=retry.delay)
        except Exception as nak_exc:
            d.log.warning("nak_failed", error=repr(nak_exc))
        return True

    async def _reject_invalid(self, d: _Delivery, invalid: Invalid) -> bool:
        """Poison never blocks its partition: dead-letter it, answer if we can, move on."""
        reason = invalid.reason
        command_id, reply_to = answerable(d.msg.data, self._reply_prefixes)
        d.context["command_id"] = command_id
        try:
            await dead_letters.dead_letter(
                self._js, max_payload=self._conn.max_payload, original_subject=d.subject.original,
                payload=d.msg.data, reason=invalid.code, error=reason, deliveries=d.deliveries, stream_seq=d.seq)
            if reply_to:
                await self._conn.publish(reply_to, encode(texts.invalid_command(command_id or "", reason)))
            await d.msg.ack()
        except Exception as exc:
            d.log.warning("command_invalid_not_recorded", error=repr(exc))
            return await self._hand_back(d, delivery.after_invalid_not_recorded())
        metrics.DEAD_LETTERS.labels(invalid.code).inc()
        metrics.COMMANDS.labels(d.kind, COMMAND_INVALID).inc()
        d.log.warning("command", status="memory_command_invalid", reason=reason, duration_ms=_ms(d.started))
        return False

    async def _failed(self, d: _Delivery, command: _Decoded, exc: Exception) -> bool:
        unavailable = is_unavailable(exc)
        counted = self._failures.counted_deliveries(d.seq, d.deliveries)
        first_failed_at = self._failures.note(d.seq, unavailable=unavailable).first_failed_at
        decision = delivery.after_running(failed=True, permanent=is_permanent(exc), unavailable=unavailable,
                                          deliveries=d.deliveries, counted=counted, max_deliver=self._max_deliver)
        match decision:
            case delivery.Retry():
                event = "waiting_for_dependency" if decision.waiting_for_dependency else "command_retry"
                metrics.RETRIES.labels(d.kind).inc()
                d.log.warning(event, error=repr(exc), retry_in_s=decision.delay, duration_ms=_ms(d.started))
                return await self._hand_back(d, decision)
            case delivery.GiveUp():
                return await self._give_up(d, command, exc, decision, first_failed_at)
            case delivery.Ack():  # after_running(failed=True) never acks: a failure is never settled as done
                raise RuntimeError("a failed delivery was decided done")

    async def _give_up(self, d: _Delivery, command: _Decoded, exc: Exception, give_up: delivery.GiveUp,
                       first_failed_at: datetime | None) -> bool:
        cmd = command.cmd
        try:
            stored = await self._stored_command(cmd.command_id, cmd.workspace_id)
            outcome = delivery.give_up_with(give_up, stored=stored is not None)
            if stored is not None and republishes(stored, d.seq):
                # Applied by this very message: its events are stored before it is acked.
                await self._events.publish_coalesced(published_events(stored))
            if isinstance(outcome, delivery.DeadLetter):
                await dead_letters.dead_letter(
                    self._js, max_payload=self._conn.max_payload, original_subject=d.subject.original,
                    payload=d.msg.data, reason=outcome.reason, error=repr(exc), deliveries=d.deliveries,
                    first_failed_at=first_failed_at, stream_seq=d.seq)
            if cmd.reply_to:
                await self._conn.publish(cmd.reply_to, answer(stored).result if stored is not None
                                         else command.service.failure_result(cmd))
            await d.msg.ack()
            self._failures.forget(d.seq)
        except Exception as dlq_exc:
            retry = delivery.after_give_up_failed(d.deliveries)
            d.log.error("dead_letter_failed", error=repr(dlq_exc), retry_in_s=retry.delay)
            return await self._hand_back(d, retry)
        status = "answered_from_inbox" if isinstance(outcome, delivery.AnswerStored) else "dead_lettered"
        if isinstance(outcome, delivery.DeadLetter):
            metrics.DEAD_LETTERS.labels(outcome.reason).inc()
        d.log.error("command", status=status, error=repr(exc), permanent=give_up.permanent, duration_ms=_ms(d.started))
        return False


def _queued_ms(msg: Msg) -> float | None:
    """How long the command waited between being stored in the stream and reaching its handler."""
    if not msg.metadata:
        return None
    return round((time.time() - msg.metadata.timestamp.timestamp()) * 1000, 1)


def _ms(started: float, ended: float | None = None) -> float:
    return round(((time.perf_counter() if ended is None else ended) - started) * 1000, 2)
