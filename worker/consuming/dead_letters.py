"""The dead-letter stream: what could not be processed, kept with why (docs/design.md, section 9).

Writing (the handler) and reading, replaying and dropping (the operator CLI) live here.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
from nats.errors import MaxPayloadError
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import APIError, NotFoundError

from contracts import subjects
from contracts.registry import COMMAND_KINDS
from contracts.subjects import COMMANDS_STREAM, DLQ_STREAM, dlq_subject
from worker.shared.jetstream import stored_headers, stored_seq, stored_subject

INVALID_COMMAND = "invalid_command"
UNSUPPORTED_COMMAND = "unsupported_command"
EXHAUSTED = "max_deliver_exhausted"
PERMANENT = "permanent_error"  # fails the same way every time (bad data): retrying cannot help


# A dead letter too large to store whole keeps these many first bytes of its original.
EXCERPT_BYTES = 4096
# The server counts headers and body against max_payload, and closes the connection of a
# client that sends more: a dead letter keeps this much room below the limit.
SIZE_MARGIN = 1024
# JetStream's answer to a message over the stream's max_msg_size.
_TOO_LARGE = 10054
# Longer original subject tokens are named by their digest in the dead letter's own subject:
# a subject near the server's control-line limit would close the worker's connection.
MAX_DLQ_TOKEN = 256


def letter_id(stream_seq: int) -> str:
    """The Nats-Msg-Id of the dead letter of MEMORY_COMMANDS message `stream_seq`: one letter per
    message, however often its dead-lettering is retried."""
    return f"dlq:{stream_seq}"


def headers_size(headers: dict[str, str]) -> int:
    """Bytes of the headers as NATS sends them (`NATS/1.0`, one `key: value` line each)."""
    return 12 + sum(len(k.encode()) + len(v.encode()) + 4 for k, v in headers.items())


def by_reference(payload: bytes, headers: dict[str, str], stream_seq: int,
                 max_payload: int) -> tuple[bytes, dict[str, str]]:
    """What stands in for an original too large to keep: where it was, its size and digest,
    and as body its first bytes, as many as fit (at most EXCERPT_BYTES)."""
    headers = headers | {
        "Dlq-Payload": "excerpt",
        "Dlq-Original-Size": str(len(payload)),
        "Dlq-Original-Sha256": hashlib.sha256(payload).hexdigest(),
        "Dlq-Original-Stream": f"{COMMANDS_STREAM}:{stream_seq}",
        "Dlq-Excerpt-Bytes": "0000000",
    }
    if headers_size(headers) + SIZE_MARGIN > max_payload:  # a small max_payload: the long values give way
        headers |= {"Dlq-Error": headers["Dlq-Error"][:200],
                    "Dlq-Original-Subject": headers["Dlq-Original-Subject"][:MAX_DLQ_TOKEN]}
    room = max_payload - headers_size(headers) - SIZE_MARGIN
    excerpt = payload[:max(0, min(EXCERPT_BYTES, room))]
    return excerpt, headers | {"Dlq-Excerpt-Bytes": str(len(excerpt))}


def fits_whole(payload: bytes, headers: dict[str, str], max_payload: int) -> bool:
    return len(payload) + headers_size(headers) + SIZE_MARGIN <= max_payload


_KIND_PREFIX = re.compile(r"memory\.[A-Za-z0-9_-]+")


def letter_subject(original_subject: str) -> str:
    """dlq.<original subject>, with a literal wildcard token and control bytes percent-encoded
    (a dead letter's subject is a plain subject, found by `dlq.>`) and an over-long token
    replaced by its digest: always under dlq.memory. (subjects.is_dead_letter_subject)."""
    prefix, token = subjects.split_workspace_token(original_subject)
    if not _KIND_PREFIX.fullmatch(prefix):  # not memory.<kind>: a stored subject never is, a forged header may be
        prefix = f"{subjects.COMMAND_PREFIX}unknown"
    if token in ("*", ">"):
        token = subjects.encode_token(token)
    elif not token or len(token) > MAX_DLQ_TOKEN:
        token = "sha256_" + hashlib.sha256(token.encode()).hexdigest()[:32]
    else:  # control bytes, and DEL, which nats-server's subject filters never match (administration/stranded.py),
        # and a wildcard character or a (Unicode) space inside a token: a literal to NATS, not a plain subject
        token = "".join(f"%{ord(c):02X}" if ord(c) < 0x20 or ord(c) == 0x7F or c in "*>" or c.isspace() else c
                        for c in token)
    return dlq_subject(f"{prefix}.{token}" if prefix else token)


async def dead_letter(js: JetStreamContext, *, max_payload: int, original_subject: str, payload: bytes, reason: str,
                      error: str, deliveries: int, stream_seq: int, first_failed_at: datetime | None = None) -> None:
    """max_payload: the connection's (NATS Client.max_payload, from the server's INFO), read by
    the caller at the time of the call, so a reconnect to a server with another limit counts."""
    headers = {
        # One dead letter per command message, however often its dead-lettering is retried.
        "Nats-Msg-Id": letter_id(stream_seq),
        "Dlq-Reason": reason,
        # Header values are single-line; keep the error readable and bounded.
        "Dlq-Error": " ".join(error.split())[:1000],
        "Dlq-Deliveries": str(deliveries),
        "Dlq-Original-Subject": original_subject,
        "Dlq-First-Failed-At": (first_failed_at or datetime.now(UTC)).isoformat(),
    }
    subject = letter_subject(original_subject)
    if not subjects.is_dead_letter_subject(subject):  # the rule of every dead letter's subject
        raise ValueError(f"not a dead letter's subject: {subject!r}")
    if fits_whole(payload, headers, max_payload):
        try:
            await js.publish(subject, payload, headers=headers, stream=DLQ_STREAM)
            return
        except MaxPayloadError:
            pass
        except APIError as exc:
            if exc.err_code != _TOO_LARGE:
                raise
    # Too large to store whole: by reference, so a dead letter never exceeds what the server takes.
    excerpt, headers = by_reference(payload, headers, stream_seq, max_payload)
    await js.publish(subject, excerpt, headers=headers, stream=DLQ_STREAM)


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
    def by_reference(self) -> bool:
        """Only the first bytes of the original were kept (it was too large to store whole)."""
        return self.headers.get("Dlq-Payload") == "excerpt"

    @property
    def command_seq(self) -> int | None:
        """The MEMORY_COMMANDS sequence of the message this letter stands for (dead_letter()'s id)."""
        msg_id = self.headers.get("Nats-Msg-Id", "")
        seq = msg_id.rpartition(":")[2]
        return int(seq) if seq.isdigit() and letter_id(int(seq)) == msg_id else None

    @property
    def command_id(self) -> str | None:
        try:
            value = msgspec.json.decode(self.payload).get("command_id")
        except (msgspec.DecodeError, AttributeError):
            return None
        return value if isinstance(value, str) and value else None


def _from_raw(raw: RawStreamMsg) -> DeadLetter:
    headers = stored_headers(raw)
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
        seq=stored_seq(raw),
        original_subject=headers.get("Dlq-Original-Subject", stored_subject(raw).removeprefix(subjects.DLQ_PREFIX)),
        reason=headers.get("Dlq-Reason", "?"), error=headers.get("Dlq-Error", ""), deliveries=deliveries,
        first_failed_at=first_at, dead_lettered_at=raw.time, headers=headers, payload=raw.data or b"",
    )


async def entries(js: JetStreamContext, reason: str | None = None,
                  subject: str = subjects.DLQ_FILTER) -> AsyncGenerator[DeadLetter, None]:
    """Dead letters in stream order, optionally only those with one reason or under one subject."""
    seq = 1
    while True:
        try:
            # next_by_subj: the first message at or after seq (deleted sequences leave gaps).
            raw = await js.get_msg(DLQ_STREAM, seq, subject=subject, next=True)
        except NotFoundError:
            return
        seq = stored_seq(raw) + 1
        letter = _from_raw(raw)
        if reason is None or letter.reason == reason:
            yield letter


async def get(js: JetStreamContext, seq: int) -> DeadLetter:
    return _from_raw(await js.get_msg(DLQ_STREAM, seq))


def replay_refusal(letter: DeadLetter, *, include_invalid: bool = False) -> str | None:
    """Why a dead letter cannot be replayed, or None when it can.

    A command refused as sent (invalid_command, unsupported_command) is refused again when
    replayed unchanged, unless what refused it changed (a reply prefix added, a larger
    MAX_COMMAND_BYTES, a newer worker): only then does the operator ask for it.
    """
    if letter.by_reference:
        return (f"only the first {letter.headers.get('Dlq-Excerpt-Bytes', '?')} of its "
                f"{letter.headers.get('Dlq-Original-Size', '?')} bytes were kept (too large to dead-letter whole); "
                "the bot must send it again, smaller")
    if not subjects.is_command_subject(letter.original_subject, COMMAND_KINDS):
        # The subject comes from the letter's Dlq-Original-Subject header: a replay publishes
        # to nothing but a command subject the partitions can place, whatever the header says.
        return (f"its subject {letter.original_subject!r} is no command subject (memory.<kind>.<workspace token>) "
                "the partitions can place: a replay publishes only to those")
    if letter.reason in (INVALID_COMMAND, UNSUPPORTED_COMMAND) and not include_invalid:
        return (f"it was refused as sent ({letter.reason}: {letter.error or 'no error recorded'}), and would be"
                " refused again; the bot must send a corrected command (add --include-invalid once what"
                " refused it changed: REPLY_SUBJECT_PREFIXES, MAX_COMMAND_BYTES, a newer worker)")
    return None


@dataclass(frozen=True, slots=True)
class Replayed:
    """What became of a replayed letter: the command it was republished as, and whether the
    dead letter left MEMORY_DLQ (not when it was already gone, dropped or replayed meanwhile)."""

    letter: DeadLetter
    msg_id: str
    command_seq: int  # the republished command's MEMORY_COMMANDS sequence
    left_queue: bool


async def replay(js: JetStreamContext, letter: DeadLetter, *, include_invalid: bool = False) -> Replayed:
    """Republish the original payload to its original subject, then drop the dead letter.

    A new Nats-Msg-Id: the original id is inside JetStream's duplicate window or long gone,
    and either way the worker's inbox keeps a command that had in fact been applied harmless.
    """
    refusal = replay_refusal(letter, include_invalid=include_invalid)
    if refusal is not None:
        raise ValueError(f"dead letter {letter.seq} cannot be replayed: {refusal}")
    msg_id = f"{letter.command_id or 'dlq'}:replay:{letter.seq}:{uuid.uuid4().hex}"
    ack = await js.publish(letter.original_subject, letter.payload, headers={"Nats-Msg-Id": msg_id},
                           stream=COMMANDS_STREAM)
    try:
        left = await js.delete_msg(DLQ_STREAM, letter.seq)
    except NotFoundError:
        left = False
    return Replayed(letter, msg_id, ack.seq, left)


async def drop(js: JetStreamContext, seq: int) -> bool:
    return await js.delete_msg(DLQ_STREAM, seq)
