"""The dead-letter stream: what could not be processed, kept with why (DESIGN.md section 9)."""

from __future__ import annotations

from datetime import UTC, datetime

from nats.js import JetStreamContext

from contracts.subjects import DLQ_STREAM, dlq_subject

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
