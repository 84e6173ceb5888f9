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

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TypeVar, cast

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
# of one stream the scan stops (answering from what it saw, as partial). Far above any one
# workspace's honest backlog.
SCAN_LIMIT = 1000
# And past this long for one scan, whatever it has read: a scan holds one of the few scan
# slots every workspace shares (worker/consuming/lookup/scheduling.py).
SCAN_BUDGET_S = 2.0

T = TypeVar("T")


@dataclass(slots=True)
class _Reading:
    """How far one scan may read, and whether it read everything it was asked to."""

    limit: int
    deadline: float
    complete: bool = True

    async def bounded(self, items: AsyncGenerator[T, None]) -> AsyncIterator[T]:
        """Up to `limit` of `items`, while time is left; `complete` turns false when the scan
        stops with something left to read (the item past the limit is fetched, not used)."""
        loop = asyncio.get_running_loop()
        async with contextlib.aclosing(items):
            seen = 0
            async for item in items:
                if seen >= self.limit or loop.time() > self.deadline:
                    self.complete = False
                    return
                seen += 1
                yield item


class CommandOutcomes:
    def __init__(self, repo: MemoryRepository, js: JetStreamContext, reply_prefixes: tuple[str, ...], *,
                 scan_limit: int = SCAN_LIMIT, scan_budget_s: float = SCAN_BUDGET_S) -> None:
        self._repo = repo
        self._js = js
        self.reply_prefixes = reply_prefixes  # what every answer is held to (the lookup's reply subject too)
        self._scan_limit = scan_limit
        self._scan_budget_s = scan_budget_s

    async def describe(self, workspace_token: str, command_token: str) -> bytes:
        """The CommandOutcome of the command these lookup subject tokens name, as JSON."""
        return (await self.describe_many(workspace_token, [command_token]))[command_token]

    async def describe_many(self, workspace_token: str, command_tokens: Iterable[str]) -> dict[str, bytes]:
        """The CommandOutcome of each command of one workspace, as JSON, by command token: one
        read of the workspace's queue and dead letters answers them all."""
        answers: dict[str, bytes] = {}
        asked: dict[str, CommandOutcome] = {}
        for token in command_tokens:
            key = lookup_key(token, workspace_token)
            if key is None:
                answers[token] = encode(CommandOutcome(command_id=token, workspace_id=workspace_token,
                                                       outcome="unknown"))
            else:
                asked[token] = CommandOutcome(command_id=key[0], workspace_id=key[1], outcome="unknown")
        await self._answer_processed(asked, answers)
        if not asked:
            return answers
        workspace_id = next(iter(asked.values())).workspace_id
        # The command's subject carries the token as its publisher wrote it; both spellings.
        tokens = sorted({workspace_token, subjects.encode_token(workspace_id)})
        ids = {known.command_id for known in asked.values()}
        reading = _Reading(self._scan_limit, asyncio.get_running_loop().time() + self._scan_budget_s)
        stored = await self._latest_stored(tokens, ids, reading)
        letters = await self._dead_letters(tokens, ids, reading)
        await self._answer_processed(asked, answers)  # processed while we looked
        for token, known in asked.items():
            answers[token] = encode(self._unprocessed(known, stored.get(known.command_id),
                                                      letters.get(known.command_id), partial=not reading.complete))
        return answers

    async def _answer_processed(self, asked: dict[str, CommandOutcome], answers: dict[str, bytes]) -> None:
        """Answers (and takes out of `asked`) the commands the inbox holds."""
        for token, known in list(asked.items()):
            stored = await self._repo.stored_command(known.command_id, known.workspace_id)
            if stored is not None:
                del asked[token]
                answers[token] = encode(msgspec.structs.replace(known, outcome="processed", kind=stored.kind,
                                                                result=msgspec.Raw(answer(stored).result)))

    def _unprocessed(self, known: CommandOutcome, stored: tuple[str, int] | None,
                     letter: dead_letters.DeadLetter | None, *, partial: bool) -> CommandOutcome:
        known = msgspec.structs.replace(known, partial=partial)
        if stored is not None and (letter is None or (letter.command_seq or 0) < stored[1]):
            return msgspec.structs.replace(known, outcome="queued", kind=stored[0])
        if letter is not None:
            kind = subjects.kind_of(letter.original_subject)
            return msgspec.structs.replace(known, outcome="dead_lettered", dead_letter=self._info(letter),
                                           **({"kind": kind} if kind in COMMAND_KINDS else {}))
        return known

    async def _latest_stored(self, tokens: list[str], ids: set[str], reading: _Reading) -> dict[str, tuple[str, int]]:
        """(kind, stream sequence) of each command's latest copy in MEMORY_COMMANDS, by command id."""
        latest: dict[str, tuple[str, int]] = {}
        for token in tokens:
            async for raw in reading.bounded(_messages(self._js, subjects.COMMANDS_STREAM,
                                                       subjects.partitioned_workspace_filter(token))):
                seq, command_id = stored_seq(raw), command_id_of(raw.data)
                if command_id in ids and (command_id not in latest or seq > latest[command_id][1]):
                    latest[command_id] = (subjects.parse_stored(stored_subject(raw)).kind, seq)
        return latest

    async def _dead_letters(self, tokens: list[str], ids: set[str], reading: _Reading) -> dict[str, dead_letters.DeadLetter]:
        """Each command's latest dead letter, by command id."""
        latest: dict[str, dead_letters.DeadLetter] = {}
        for token in tokens:
            letters = subjects.dlq_subject(subjects.command_filter(workspace_token=token))
            async for letter in reading.bounded(dead_letters.entries(self._js, subject=letters)):
                command_id = letter.command_id
                if command_id in ids and (command_id not in latest or letter.seq > latest[command_id].seq):
                    latest[command_id] = letter
        return latest

    def _info(self, letter: dead_letters.DeadLetter) -> DeadLetterInfo:
        reply_to = reply_to_of(letter.payload)
        return DeadLetterInfo(
            reason=cast(DeadLetterReason, letter.reason), error=letter.error, deliveries=letter.deliveries,
            dead_lettered_at=letter.dead_lettered_at,
            reply_to_allowed=reply_to is None or subjects.may_answer(reply_to, self.reply_prefixes),
            allowed_reply_prefixes=list(self.reply_prefixes))


async def _messages(js: JetStreamContext, stream: str, subject: str) -> AsyncGenerator[RawStreamMsg, None]:
    """The stream's messages under `subject`, in order, one round trip each."""
    seq = 1
    while True:
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
