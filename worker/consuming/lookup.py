"""What became of a command, for the result lookup (DESIGN.md 3.1; contracts/lookup.py).

Asked in this order, so that a command moving on while we look is never reported as
unknown: the inbox (processed), the command stream (queued: a work-queue stream keeps a
command until the worker acknowledges it), the inbox again (the worker acknowledges only
after the commit, so a command gone from the stream is in the inbox or the dead-letter
stream), then the dead-letter stream.
"""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.codec import encode
from contracts.commands import PROBE_DECODER
from contracts.lookup import CommandOutcome, DeadLetterInfo
from db.repository import MemoryRepository
from worker.consuming import dead_letters

# A workspace's queue or dead letters are read one message per round trip; past this many
# the scan stops (answering from what it saw). Far above any one workspace's backlog.
SCAN_LIMIT = 1000


class CommandOutcomes:
    def __init__(self, repo: MemoryRepository, js: JetStreamContext, reply_prefixes: tuple[str, ...]) -> None:
        self._repo = repo
        self._js = js
        self._reply_prefixes = reply_prefixes

    async def describe(self, workspace_token: str, command_token: str) -> bytes:
        """The CommandOutcome of the command these lookup subject tokens name, as JSON."""
        key = lookup_key(command_token, workspace_token)
        if key is None:
            return encode(CommandOutcome(command_id=command_token, workspace_id=workspace_token, outcome="unknown"))
        command_id, workspace_id = key
        # The command's subject carries the token as its publisher wrote it; both spellings.
        tokens = sorted({workspace_token, subjects.encode_token(workspace_id)})
        known = CommandOutcome(command_id=command_id, workspace_id=workspace_id, outcome="unknown")

        processed = await self._processed(known)
        if processed is None:
            kind = await self._queued_kind(tokens, command_id)
            if kind is not None:
                return encode(msgspec.structs.replace(known, outcome="queued", kind=kind))
            processed = await self._processed(known)
        if processed is not None:
            return processed
        letter = await self._dead_letter(tokens, command_id)
        if letter is not None:
            kind = letter.original_subject.split(".")[1]
            return encode(msgspec.structs.replace(
                known, outcome="dead_lettered", dead_letter=self._info(letter),
                **({"kind": kind} if kind in subjects.COMMAND_KINDS else {})))
        return encode(known)

    async def _processed(self, known: CommandOutcome) -> bytes | None:
        stored = await self._repo.stored_kind_and_result(known.command_id, known.workspace_id)
        if stored is None:
            return None
        kind, result = stored
        return encode(msgspec.structs.replace(known, outcome="processed", kind=kind, result=msgspec.Raw(result)))

    async def _queued_kind(self, tokens: list[str], command_id: str) -> str | None:
        for token in tokens:
            async for raw in _messages(self._js, subjects.COMMANDS_STREAM,
                                       subjects.partitioned_workspace_filter(token)):
                if _command_id(raw.data) == command_id:
                    return subjects.parse_partitioned(raw.subject)[0]
        return None

    async def _dead_letter(self, tokens: list[str], command_id: str) -> dead_letters.DeadLetter | None:
        latest = None
        for token in tokens:
            seen = 0
            letters = subjects.dlq_subject(subjects.command_filter(workspace_token=token))
            async for letter in dead_letters.entries(self._js, subject=letters):
                seen += 1
                if letter.command_id == command_id and (latest is None or letter.seq > latest.seq):
                    latest = letter
                if seen >= SCAN_LIMIT:
                    break
        return latest

    def _info(self, letter: dead_letters.DeadLetter) -> DeadLetterInfo:
        reply_to = _reply_to(letter.payload)
        return DeadLetterInfo(
            reason=letter.reason, error=letter.error, deliveries=letter.deliveries,
            dead_lettered_at=letter.dead_lettered_at,
            reply_to_allowed=reply_to is None or reply_to.startswith(self._reply_prefixes),
            allowed_reply_prefixes=list(self._reply_prefixes))


async def _messages(js: JetStreamContext, stream: str, subject: str):
    seq = 1
    for _ in range(SCAN_LIMIT):
        try:
            raw = await js.get_msg(stream, seq, subject=subject, next=True)
        except NotFoundError:
            return
        seq = raw.seq + 1
        yield raw


def _probe(data: bytes | None):
    try:
        return PROBE_DECODER.decode(data or b"")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _command_id(data: bytes | None) -> str | None:
    probe = _probe(data)
    return probe.command_id if probe is not None and isinstance(probe.command_id, str) else None


def _reply_to(data: bytes | None) -> str | None:
    probe = _probe(data)
    return probe.reply_to if probe is not None and isinstance(probe.reply_to, str) else None


def lookup_key(command_token: str, workspace_token: str) -> tuple[str, str] | None:
    """(command id, workspace id) of a lookup; None when no command can have them: bytes that
    are not UTF-8, or a NUL, which PostgreSQL text cannot hold (commands with one are refused)."""
    try:
        key = subjects.decode_token(command_token), subjects.decode_token(workspace_token)
    except UnicodeDecodeError:
        return None
    return None if any("\x00" in part for part in key) else key
