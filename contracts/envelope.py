"""What every command carries (the Envelope), the reply rule its reply_to is held to, and the probe
that reads where a broken command's refusal goes."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from .decoding import CommandDecoder
from .fields import CommandId, DiscordId, IssuedAt
from .subjects import REPLY_SUBJECT_MAX, REPLY_SUBJECT_PATTERN

REPLY_SUBJECT_RULE = (
    "reply_to must start with one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`; a bot under "
    "per-role permissions has its own prefix, which the operator adds). The worker publishes nowhere else: "
    "a command whose reply_to is not allowed is not applied, gets no reply, and is dead-lettered with reason "
    "invalid_command; the result lookup then answers outcome dead_lettered with reply_to_allowed false. "
    "A result lookup's own reply subject is held to the same prefixes: a lookup asking to be answered "
    "anywhere else gets no answer.")
ReplySubject = Annotated[str, Meta(
    max_length=REPLY_SUBJECT_MAX, pattern=REPLY_SUBJECT_PATTERN,
    description="A NATS subject (no wildcards) the worker publishes the result to. " + REPLY_SUBJECT_RULE)]


class Envelope(Struct, kw_only=True, frozen=True):
    """Fields every command carries.

    Attributes:
        command_id: The command's identity, unique per logical command (a UUID is a good
            choice). The worker applies a command_id at most once and answers every repeat with
            the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header
            so JetStream drops a repeat inside its duplicate window.
        issued_at: When the bot issued the command (RFC 3339), set by the bot. Informational:
            the worker processes a workspace's commands in publish order, never by this time.
        reply_to: Where the worker publishes the result: a NATS subject under one of the
            operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply
            inbox, subscribed before the publish. null: the command is applied and nobody is
            answered. A subject outside the prefixes is never published to: the command is
            dead-lettered unapplied (see the result lookup).
        workspace_id: The Discord guild id, or the user's id in a direct message: whose server
            memories, settings and directory rows the command uses. It must equal the last token
            of the subject the command is published to (memory.<kind>.<workspace token>), or the
            command is refused as invalid.
        dry_run: True: decide without effect (shadow mode, docs/design.md section 3.6). The
            worker runs the command as it would (the owner's lock, the same context, the same
            decision) and answers the result it would have given, but writes no memory,
            publishes no event and stores no result: the command_id is not used up, and a
            later real command with it is applied as new. The answer is kept for the shadow
            report (memory.shadow) instead. A memory id the command would have created is the
            one the table's sequence would give next, a guess a concurrent write can beat.
            Bad input and refusals are answered exactly as for a real command.
    """

    command_id: CommandId
    issued_at: IssuedAt
    reply_to: ReplySubject | None = None
    workspace_id: DiscordId
    dry_run: bool = False


class ReplyProbe(Struct):
    """The least a broken command may still tell us: where to send the refusal (never published)."""

    command_id: Any = None
    reply_to: Any = None


# Read as the commands are (contracts/decoding.py): what a command's decoder reads, the probe reads.
PROBE_DECODER = CommandDecoder(ReplyProbe)
