"""Commands no consumer can receive: found at the head of the stream and dead-lettered.

nats-server stores a command whose subject holds the byte 0x7F (DEL; a bot's permission on
`memory.create.*` admits it), but its subject tree, which every filtered consumer matches
with, never matches such a subject: no partition consumer, and not `memory-worker-unplaced`,
ever delivers it (found by issue 14's boundary fuzz, nats-server 2.15), and no filtered
purge removes it. Everything consumed is purged (worker/consuming/administration/retention.py, which calls
the sweep after each purge), so such a command ends up at the head of the stream: the sweep
looks there whenever the head has waited longer than any delivery takes, by sequence (a
lookup by sequence does not go through the subject tree), and dead-letters what it finds
there, answering where a reply subject can be read, then deletes it from the stream.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import structlog
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import StreamState
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.codec import encode
from worker.consuming import dead_letters
from worker.consuming.probe import answerable
from worker.kinds.create import texts
from worker.shared.jetstream import stored_seq, stored_subject

log = structlog.get_logger("worker")

# A head older than this was not delivered: a delivered command is refreshed, not left.
STALE_S = 3.0
SCAN = 64  # sequences looked at from the head per sweep


def unreceivable(subject: str) -> bool:
    return "\x7f" in subject


def original_of(stored_subject: str) -> str:
    return subjects.parse_stored(stored_subject).original


async def sweep_once(js: JetStreamContext, nc: NatsClient, reply_prefixes: tuple[str, ...],
                     state: StreamState) -> int:
    """Look at the head of MEMORY_COMMANDS as `state` (just read by the caller) describes it."""
    if not state.messages:
        return 0
    removed = 0
    for seq in range(state.first_seq, min(state.last_seq, state.first_seq + SCAN - 1) + 1):
        try:
            raw = await js.get_msg(subjects.COMMANDS_STREAM, seq)
        except NotFoundError:
            continue
        if seq == state.first_seq and raw.time and (datetime.now(UTC) - raw.time).total_seconds() < STALE_S:
            return 0  # the head is young: deliveries are keeping up
        subject, seq = stored_subject(raw), stored_seq(raw)
        if not unreceivable(subject):
            continue
        original = original_of(subject)
        reason = f"the subject {original!r} holds the byte 0x7F, which nats-server stores but no consumer receives"
        data = raw.data or b""
        await dead_letters.dead_letter(js, max_payload=nc.max_payload, original_subject=original, payload=data,
                                       reason=dead_letters.INVALID_COMMAND, error=reason, deliveries=0, stream_seq=seq)
        command_id, reply_to = answerable(data, reply_prefixes)
        if reply_to:
            await nc.publish(reply_to, encode(texts.invalid_command(command_id or "", reason)))
        with contextlib.suppress(NotFoundError):  # another replica's sweep got there first
            await js.delete_msg(subjects.COMMANDS_STREAM, seq)
        log.warning("command", status="memory_command_invalid", subject=original, command_id=command_id,
                    reason=reason, stream_seq=seq)
        removed += 1
    return removed
