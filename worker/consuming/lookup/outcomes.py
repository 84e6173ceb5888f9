"""What became of a command, for the result lookup (docs/design.md, section 3.1; contracts/lookup.py).

Asked in this order, so that a command moving on while we look is never reported as
unknown: the inbox (processed), the command stream, the dead-letter stream, the inbox again.
MEMORY_COMMANDS keeps a command after its acknowledgement until the next purge
(worker/consuming/administration/retention.py), so a command found there is queued only if it was neither
processed nor dead-lettered since it was stored (a dead letter names the stream sequence it
stands for; a replayed command is stored again, under a later one). The worker acknowledges
only after the commit or the dead letter, and purges only what was acknowledged, so a command
gone from the stream is in the inbox or the dead-letter stream by the time it is gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import msgspec
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.codec import encode
from contracts.lookup import CommandOutcome, DeadLetterInfo, DeadLetterReason
from contracts.registry import COMMAND_KINDS
from db.repository import MemoryRepository
from worker.consuming import dead_letters
from worker.consuming.probe import command_id_of, reply_to_of
from worker.services.stored import answer
from worker.shared.jetstream import stored_seq, stored_subject

# A workspace's queue or dead letters are read one message per round trip; past this many
# the scan stops (answering from what it saw). Far above any one workspace's backlog.
SCAN_LIMIT = 1000


class CommandOutcomes:
    def __init__(self, repo: MemoryRepository, js: JetStreamContext, reply_prefixes: tuple[str, ...]) -> None:
        self._repo = repo
        self._js = js
        self.reply_prefixes = reply_prefixes  # what every answer is held to (the lookup's reply subject too)

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
        if processed is not None:
            return processed
        stored = await self._latest_stored(tokens, command_id)
        letter = await self._dead_letter(tokens, command_id)
        processed = await self._processed(known)  # processed while we looked
        if processed is not None:
            return processed
        if stored is not None and (letter is None or (letter.command_seq or 0) < stored[1]):
            return encode(msgspec.structs.replace(known, outcome="queued", kind=stored[0]))
        if letter is not None:
            kind = subjects.kind_of(letter.original_subject)
            return encode(msgspec.structs.replace(
                known, outcome="dead_lettered", dead_letter=self._info(letter),
                **({"kind": kind} if kind in COMMAND_KINDS else {})))
        return encode(known)

    async def _processed(self, known: CommandOutcome) -> bytes | None:
        stored = await self._repo.stored_command(known.command_id, known.workspace_id)
        if stored is None:
            return None
        return encode(msgspec.structs.replace(known, outcome="processed", kind=stored.kind,
                                              result=msgspec.Raw(answer(stored).result)))

    async def _latest_stored(self, tokens: list[str], command_id: str) -> tuple[str, int] | None:
        """(kind, stream sequence) of the command's latest copy in MEMORY_COMMANDS."""
        latest = None
        for token in tokens:
            async for raw in _messages(self._js, subjects.COMMANDS_STREAM,
                                       subjects.partitioned_workspace_filter(token)):
                seq = stored_seq(raw)
                if command_id_of(raw.data) == command_id and (latest is None or seq > latest[1]):
                    latest = (subjects.parse_stored(stored_subject(raw)).kind, seq)
        return latest

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
        reply_to = reply_to_of(letter.payload)
        return DeadLetterInfo(
            reason=cast(DeadLetterReason, letter.reason), error=letter.error, deliveries=letter.deliveries,
            dead_lettered_at=letter.dead_lettered_at,
            reply_to_allowed=reply_to is None or subjects.may_answer(reply_to, self.reply_prefixes),
            allowed_reply_prefixes=list(self.reply_prefixes))


async def _messages(js: JetStreamContext, stream: str, subject: str) -> AsyncIterator[RawStreamMsg]:
    seq = 1
    for _ in range(SCAN_LIMIT):
        try:
            raw = await js.get_msg(stream, seq, subject=subject, next=True)
        except NotFoundError:
            return
        seq = stored_seq(raw) + 1
        yield raw


def lookup_key(command_token: str, workspace_token: str) -> tuple[str, str] | None:
    """(command id, workspace id) of a lookup; None when no command can have them: bytes that
    are not UTF-8, or a NUL, which PostgreSQL text cannot hold (commands with one are refused)."""
    try:
        key = subjects.decode_token(command_token), subjects.decode_token(workspace_token)
    except UnicodeDecodeError:
        return None
    return None if any("\x00" in part for part in key) else key
