"""The dead-letter stream: what could not be processed, kept with why (DESIGN.md section 9).

Writing (the handler) and reading, replaying and dropping (the operator CLI) live here.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts.subjects import COMMANDS_STREAM, DLQ_STREAM, dlq_subject

INVALID_COMMAND = "invalid_command"
UNSUPPORTED_COMMAND = "unsupported_command"
EXHAUSTED = "max_deliver_exhausted"
PERMANENT = "permanent_error"  # fails the same way every time (bad data): retrying cannot help


async def dead_letter(js: JetStreamContext, *, original_subject: str, payload: bytes, reason: str,
                      error: str, deliveries: int, stream_seq: int, first_failed_at: datetime | None = None) -> None:
    headers = {
        # One dead letter per command message, however often its dead-lettering is retried.
        "Nats-Msg-Id": f"dlq:{stream_seq}",
        "Dlq-Reason": reason,
        # Header values are single-line; keep the error readable and bounded.
        "Dlq-Error": " ".join(error.split())[:1000],
        "Dlq-Deliveries": str(deliveries),
        "Dlq-Original-Subject": original_subject,
        "Dlq-First-Failed-At": (first_failed_at or datetime.now(UTC)).isoformat(),
    }
    await js.publish(dlq_subject(original_subject), payload, headers=headers, stream=DLQ_STREAM)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    seq: int
    original_subject: str
    reason: str
    error: str
    deliveries: int
    first_failed_at: datetime | None
    dead_lettered_at: datetime | None
    headers: dict[str, str]
    payload: bytes

    @property
    def command_id(self) -> str | None:
        try:
            value = msgspec.json.decode(self.payload).get("command_id")
        except (msgspec.DecodeError, AttributeError):
            return None
        return value if isinstance(value, str) and value else None


def _from_raw(raw) -> DeadLetter:
    headers = dict(raw.headers or {})
    first = headers.get("Dlq-First-Failed-At")
    try:
        first_at = datetime.fromisoformat(first) if first else None
    except ValueError:
        first_at = None
    try:
        deliveries = int(headers.get("Dlq-Deliveries", "0"))
    except ValueError:
        deliveries = 0
    return DeadLetter(
        seq=raw.seq, original_subject=headers.get("Dlq-Original-Subject", raw.subject.removeprefix("dlq.")),
        reason=headers.get("Dlq-Reason", "?"), error=headers.get("Dlq-Error", ""), deliveries=deliveries,
        first_failed_at=first_at, dead_lettered_at=raw.time, headers=headers, payload=raw.data or b"",
    )


async def entries(js: JetStreamContext, reason: str | None = None, subject: str = "dlq.>") -> AsyncIterator[DeadLetter]:
    """Dead letters in stream order, optionally only those with one reason or under one subject."""
    seq = 1
    while True:
        try:
            # next_by_subj: the first message at or after seq (deleted sequences leave gaps).
            raw = await js.get_msg(DLQ_STREAM, seq, subject=subject, next=True)
        except NotFoundError:
            return
        seq = raw.seq + 1
        letter = _from_raw(raw)
        if reason is None or letter.reason == reason:
            yield letter


async def get(js: JetStreamContext, seq: int) -> DeadLetter:
    return _from_raw(await js.get_msg(DLQ_STREAM, seq))


async def replay(js: JetStreamContext, letter: DeadLetter) -> None:
    """Republish the original payload to its original subject, then drop the dead letter.

    A new Nats-Msg-Id: the original id is inside JetStream's duplicate window or long gone,
    and either way the worker's inbox keeps a command that had in fact been applied harmless.
    """
    msg_id = f"{letter.command_id or 'dlq'}:replay:{letter.seq}:{uuid.uuid4().hex}"
    await js.publish(letter.original_subject, letter.payload, headers={"Nats-Msg-Id": msg_id},
                     stream=COMMANDS_STREAM)
    await js.delete_msg(DLQ_STREAM, letter.seq)


async def drop(js: JetStreamContext, seq: int) -> bool:
    return await js.delete_msg(DLQ_STREAM, seq)
