"""The bot side: publish a command to JetStream and await its result on a reply inbox."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import PubAck

from contracts import registry, subjects
from contracts.codec import RESULT_DECODER, encode
from contracts.envelope import Envelope
from contracts.kinds.create import CommandResult, CreateMemory
from contracts.kinds.manual import ManualMemory, ManualResult
from contracts.kinds.reinforce import ReinforceMemories, ReinforceResult
from contracts.kinds.seed_bio import SeedBio, SeedBioResult
from contracts.kinds.shadow import ShadowedKind, ShadowReport, ShadowResult
from contracts.kinds.update import UpdateMemory, UpdateResult
from contracts.lookup import CommandOutcome, DeadLetterInfo
from contracts.registry import COMMAND_TYPES, CommandKind, CommandSpec
from contracts.result_parts import InvalidCommandResult
from worker.client.lookups import lookup_outcome, lookup_result
from worker.client.shadowing import SHADOW_TIMEOUT_S, Shadowing, dry_run_msg_id
from worker.shared.atomic import publish_atomic
from worker.shared.coalescer import Coalescer

_Result = TypeVar("_Result")
_Own = TypeVar("_Own")
_Command = TypeVar("_Command", bound=Envelope)
_KindResult = TypeVar("_KindResult", bound=msgspec.Struct)

# Commands published at the same moment go to JetStream as one atomic batch: one disk flush
# for all of them instead of one each (the command stream's flush is what a publish waits
# for). Too few for a batch (worker/shared/atomic.py) go one by one, as do all of a refused batch.
BATCH_MAX_COMMANDS = 256
# How long a batch's commit may take before its commands are sent one by one (the duplicate
# window drops whatever a late commit did store).
BATCH_ACK_TIMEOUT_S = 5.0


class _Publish(msgspec.Struct, frozen=True):
    subject: str
    payload: bytes
    msg_id: str


# Lookup polling while a command is still queued.
LOOKUP_POLL_MIN_S = 0.05
LOOKUP_POLL_MAX_S = 1.0
# Dead-letter reasons a re-send cannot cure: the command is refused the same way again.
GIVE_UP_REASONS = frozenset({"invalid_command", "unsupported_command"})


class ResultTimeout(TimeoutError):
    """No result arrived in time. The command may still be applied: retry with the same id."""


class CommandDeadLettered(RuntimeError):
    """The worker set the command aside without applying it (it is in MEMORY_DLQ)."""

    def __init__(self, outcome: CommandOutcome) -> None:
        self.outcome = outcome
        letter = outcome.dead_letter
        if not isinstance(letter, DeadLetterInfo):  # an outcome dead_lettered always names why
            super().__init__(f"command {outcome.command_id} was dead-lettered")
            return
        hint = "" if letter.reply_to_allowed else (
            f"; its reply_to is not allowed: it must start with one of {', '.join(letter.allowed_reply_prefixes)}")
        super().__init__(f"command {outcome.command_id} was dead-lettered ({letter.reason}: {letter.error}){hint}")


class MemoryClient:
    """One reply subscription per client; results are matched to commands by reply subject.

    Retrying with the same command id is always safe: the worker's inbox answers a repeat
    with the stored result and changes nothing.
    """

    def __init__(self, nc: NatsClient, *, timeout: float = 15.0) -> None:
        self._conn = nc
        self._js = nc.jetstream()
        self._timeout = timeout
        # The connection's own inbox prefix: a bot whose permissions allow replies only under
        # its private prefix (nats.connect(inbox_prefix=...)) gets its results there.
        self._inbox_prefix = nc.new_inbox()
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        self._sub: Subscription | None = None
        self._publish = Coalescer(self._publish_batch, self._publish_one, max_batch=BATCH_MAX_COMMANDS, runners=2)
        self._shadowing = Shadowing(self)

    async def _publish_one(self, pub: _Publish) -> PubAck:
        return await self._js.publish(pub.subject, pub.payload, headers={"Nats-Msg-Id": pub.msg_id},
                                      stream=subjects.COMMANDS_STREAM)

    async def _publish_batch(self, pubs: Sequence[_Publish]) -> list[PubAck] | None:
        """One atomic batch, or None: the coalescer then sends each on its own, since only a
        single publish says which command a duplicate Nats-Msg-Id refused the batch for."""
        stored = await publish_atomic(self._conn, [(p.subject, p.payload, {"Nats-Msg-Id": p.msg_id}) for p in pubs],
                                      timeout=BATCH_ACK_TIMEOUT_S)
        if stored is None:
            return None
        first = stored.seq - len(pubs) + 1
        return [PubAck(stream=stored.stream, seq=first + i, duplicate=False, batch_size=len(pubs))
                for i in range(len(pubs))]

    async def start(self) -> MemoryClient:
        self._sub = await self._conn.subscribe(f"{self._inbox_prefix}.*", cb=self._on_reply)
        return self

    async def close(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
        for fut in self._waiting.values():
            fut.cancel()
        self._waiting.clear()

    async def __aenter__(self) -> MemoryClient:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _on_reply(self, msg: Msg) -> None:
        fut = self._waiting.pop(msg.subject, None)
        if fut is not None and not fut.done():
            fut.set_result(msg.data)

    def reply_subject(self) -> str:
        return f"{self._inbox_prefix}.{uuid.uuid4().hex}"

    def _no_lookup_answer(self) -> str:
        # The worker answers results and lookups only under its REPLY_SUBJECT_PREFIXES: a
        # connection whose inbox is elsewhere hears neither (docs/design.md, section 3.1).
        return (f", nor did the result lookup answer: no worker is running, or this connection's inbox "
                f"{self._inbox_prefix}. is under none of the worker's REPLY_SUBJECT_PREFIXES, which it answers only")

    async def send_raw(self, kind: str, workspace_id: str, payload: bytes, *, command_id: str,
                       reply_to: str | None, timeout: float | None = None, msg_id: str | None = None) -> bytes | None:
        """Publish a command as bytes; await the raw result when reply_to is one of ours.
        `msg_id`: its Nats-Msg-Id, when not the command_id (a dry run's)."""
        fut: asyncio.Future[bytes] | None = None
        if reply_to and reply_to.startswith(self._inbox_prefix):
            fut = asyncio.get_running_loop().create_future()
            self._waiting[reply_to] = fut
        try:
            ack = await self._publish(_Publish(subjects.command_subject(kind, workspace_id), payload,
                                               msg_id or command_id))
            if fut is None:
                return None
            wait = timeout or self._timeout
            if ack.duplicate:
                # JetStream dropped the repeat as a duplicate, so no reply comes for it: the
                # lookup says what became of the first one.
                return await self._after_duplicate(kind, workspace_id, payload, command_id, fut, wait)
            try:
                return await asyncio.wait_for(fut, wait)
            except TimeoutError:
                # Silence: the reply may be lost, or the command refused where no reply goes.
                outcome = await lookup_outcome(self._conn, workspace_id, command_id)
                if outcome is not None and outcome.outcome == "processed":
                    return msgspec.json.encode(outcome.result)
                if outcome is not None and outcome.outcome == "dead_lettered":
                    raise CommandDeadLettered(outcome) from None
                raise ResultTimeout(f"no result for command {command_id} within {wait}s"
                                    + ("" if outcome is not None else self._no_lookup_answer())) from None
        finally:
            if reply_to:
                self._waiting.pop(reply_to, None)

    async def _after_duplicate(self, kind: str, workspace_id: str, payload: bytes, command_id: str,
                               fut: asyncio.Future[bytes], wait: float) -> bytes:
        """Processed: its stored result. Queued: wait for it. Dead-lettered as invalid: give up
        (it would be refused again). Otherwise (never stored, or it ran out of retries): send it
        again under a new message id; the inbox keeps a second delivery harmless."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        poll = LOOKUP_POLL_MIN_S
        while True:
            outcome = await lookup_outcome(self._conn, workspace_id, command_id)
            state = outcome.outcome if outcome is not None else "unknown"
            if outcome is not None and state == "processed":
                return msgspec.json.encode(outcome.result)
            if (outcome is not None and state == "dead_lettered" and isinstance(outcome.dead_letter, DeadLetterInfo)
                    and outcome.dead_letter.reason in GIVE_UP_REASONS):
                raise CommandDeadLettered(outcome)
            if state != "queued":
                await self._js.publish(subjects.command_subject(kind, workspace_id), payload,
                                       headers={"Nats-Msg-Id": f"{command_id}:resend:{uuid.uuid4().hex}"},
                                       stream=subjects.COMMANDS_STREAM)
                break
            # Queued: the first delivery answers its own reply_to; ours gets it only when the
            # command reused it, so watch both the reply and the lookup.
            left = deadline - loop.time()
            if left <= 0:
                raise ResultTimeout(f"command {command_id} still queued after {wait}s")
            done, _ = await asyncio.wait({fut}, timeout=min(poll, left))
            if done:
                return fut.result()
            poll = min(poll * 2, LOOKUP_POLL_MAX_S)
        try:
            return await asyncio.wait_for(fut, max(deadline - loop.time(), 0.1))
        except TimeoutError:
            raise ResultTimeout(f"no result for command {command_id} within {wait}s") from None

    async def _send(self, kind: CommandKind, command: Envelope, decode: Callable[[bytes], _Result],
                    timeout: float | None) -> _Result:
        if command.reply_to is None or not command.reply_to.startswith(self._inbox_prefix):
            command = msgspec.structs.replace(command, reply_to=self.reply_subject())
        raw = await self.send_raw(kind, command.workspace_id, encode(command),
                                  command_id=command.command_id, reply_to=command.reply_to, timeout=timeout,
                                  msg_id=dry_run_msg_id(command.command_id) if command.dry_run else None)
        if raw is None:  # reply_to is this client's own: send_raw waits for the result
            raise RuntimeError(f"no result awaited for command {command.command_id}")
        return decode(raw)

    async def send(self, kind: CommandSpec[Any, _Command, _KindResult], command: _Command | dict[str, Any], *,
                   timeout: float | None = None) -> _KindResult | InvalidCommandResult:
        """A command of any kind, by its registry entry (`registry.UPDATE`), and its reply as the entry
        types it (CommandSpec.decode_reply): a new kind needs no change here. A dict is completed."""
        return await self._send(kind.kind, _complete(command, kind.command), kind.decode_reply, timeout)

    async def create(self, command: CreateMemory | dict[str, Any], *, timeout: float | None = None) -> CommandResult:
        """Send memory.create and return its result. A dict is completed with an id, time and reply."""
        return await self._send("create", _complete(command, CreateMemory), RESULT_DECODER.decode, timeout)

    # The other kinds' replies: their result, or an InvalidCommandResult (memory_command_invalid).
    async def update(self, command: UpdateMemory | dict[str, Any], *,
                     timeout: float | None = None) -> UpdateResult | InvalidCommandResult:
        """Send memory.update (the model's update_long_term_memory call) and return its result."""
        return await self.send(registry.UPDATE, command, timeout=timeout)

    async def manual(self, command: ManualMemory | dict[str, Any], *,
                     timeout: float | None = None) -> ManualResult | InvalidCommandResult:
        """Send memory.manual (a panel action, or a data import) and return its result."""
        return await self.send(registry.MANUAL, command, timeout=timeout)

    async def reinforce(self, command: ReinforceMemories | dict[str, Any], *,
                        timeout: float | None = None) -> ReinforceResult | InvalidCommandResult:
        """Send memory.reinforce (the memories a reply used) and return its result."""
        return await self.send(registry.REINFORCE, command, timeout=timeout)

    async def seed_bio(self, command: SeedBio | dict[str, Any], *,
                       timeout: float | None = None) -> SeedBioResult | InvalidCommandResult:
        """Send memory.seed_bio (a new proxy identity's bio) and return its result."""
        return await self.send(registry.SEED_BIO, command, timeout=timeout)

    async def shadow(self, command: ShadowReport | dict[str, Any], *,
                     timeout: float | None = None) -> ShadowResult | InvalidCommandResult:
        """Send memory.shadow (a report of the bot's own write; shadowed() sends it, unanswered)."""
        return await self.send(registry.SHADOW, command, timeout=timeout)

    async def shadowed(self, kind: ShadowedKind, command: Envelope | dict[str, Any],
                       own_write: Callable[[], Awaitable[_Own]], *,
                       reported: Callable[[_Own], Mapping[str, Any]] | None = None,
                       timeout: float = SHADOW_TIMEOUT_S) -> _Own:
        """Shadow mode: the bot's own write, with the worker's dry run of the same command
        beside it and a report of what the write gave (worker/client/shadowing.py)."""
        return await self._shadowing.shadowed(kind, lambda: _complete(command, COMMAND_TYPES[kind]), own_write,
                                              reported=reported, timeout=timeout)

    async def shadow_reports_sent(self) -> None:
        """Wait for the shadow reports still being published (a test, or a bot shutting down)."""
        await self._shadowing.reports_sent()


def _complete(command: _Command | dict[str, Any], kind: type[_Command]) -> _Command:
    """A command from a dict, with a fresh command id and issue time unless given."""
    if not isinstance(command, dict):
        return command
    fields = dict(command)
    fields.setdefault("command_id", uuid.uuid4().hex)
    fields.setdefault("issued_at", datetime.now(UTC))
    return msgspec.convert(fields, kind, from_attributes=True)


def new_create(**fields: Any) -> CreateMemory:
    """A CreateMemory with a fresh command id and issue time unless given."""
    return _complete(fields, CreateMemory)


__all__ = ["CommandDeadLettered", "MemoryClient", "ResultTimeout", "lookup_outcome", "lookup_result", "new_create"]
