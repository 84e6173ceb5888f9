"""The result lookup (docs/design.md, section 3.1): what became of a command, asked by core request/reply on
`memory.result.<workspace token>.<command token>`.

Two answers, chosen by the request body, so that clients written before the outcome existed
keep working unchanged:

- an empty body (or anything that is not an OutcomeRequest): the stored result, or `null`
  when the command has not been processed (the original answer);
- `{"answer": "outcome"}`: a CommandOutcome, which also tells queued, dead-lettered and
  unknown apart, so a bot knows whether to wait, re-send or give up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from .registry import CommandKind

Outcome = Literal["processed", "queued", "dead_lettered", "unknown"]
DeadLetterReason = Literal["invalid_command", "unsupported_command", "max_deliver_exhausted", "permanent_error"]

# The lookup reply's result is any kind of stored result; the schemas exclude each other
# through their status enums, so oneOf holds exactly one (contracts/schema.py).
STORED_RESULT_SCHEMA = {"oneOf": [{"$ref": "#/$defs/CommandResult"}, {"$ref": "#/$defs/OpResult"},
                                  {"$ref": "#/$defs/UpdateResult"}]}


# What each outcome carries, for validators (msgspec cannot say it; contracts/schema.py adds it).
# The `properties` repeat the names so that Ajv's strict mode sees them defined.
OUTCOME_RULES = [
    {"if": {"properties": {"outcome": {"enum": ["processed"]}}},
     "then": {"required": ["kind", "result"], "properties": {"kind": {}, "result": {}}}},
    {"if": {"properties": {"outcome": {"enum": ["dead_lettered"]}}},
     "then": {"required": ["dead_letter"], "properties": {"dead_letter": {}}}},
]


class OutcomeRequest(Struct, kw_only=True, forbid_unknown_fields=True):
    """The body of a lookup request that wants the outcome rather than the bare result.

    Attributes:
        answer: Always "outcome".
    """

    answer: Literal["outcome"]


class DeadLetterInfo(Struct, kw_only=True):
    """Why the worker set the command aside (its entry in MEMORY_DLQ).

    Attributes:
        reason: invalid_command (undecodable, a bad envelope, a reply_to not allowed) and
            unsupported_command fail again as sent: give up. max_deliver_exhausted and
            permanent_error may succeed when re-sent (same command_id, new Nats-Msg-Id) once the
            cause is gone.
        error: What went wrong, on one line.
        deliveries: How many deliveries the worker spent on it.
        dead_lettered_at: When it was dead-lettered; null if unknown.
        reply_to_allowed: False when the command's reply_to is outside the allowed prefixes: it
            got no reply, and re-sending it unchanged is refused the same way.
        allowed_reply_prefixes: The operator's REPLY_SUBJECT_PREFIXES, for the bot to fix its
            reply subject.
    """

    reason: DeadLetterReason
    error: str
    deliveries: int
    dead_lettered_at: Annotated[datetime, Meta(extra_json_schema={"format": "date-time"})] | None = None
    # False when the command's reply_to is outside REPLY_SUBJECT_PREFIXES: it got no reply,
    # and re-sending it unchanged would be refused the same way.
    reply_to_allowed: bool
    allowed_reply_prefixes: list[str]


class CommandOutcome(Struct, kw_only=True, omit_defaults=True):
    """What became of one command of one workspace.

    - processed: applied (or refused) exactly once; `result` is the stored result and `kind`
      the command kind it belongs to. Re-sending changes nothing.
    - queued: stored in MEMORY_COMMANDS and not yet processed (or being processed): wait.
    - dead_lettered: in MEMORY_DLQ, not applied; `dead_letter` says why. invalid_command and
      unsupported_command will fail again as sent; the others may succeed if re-sent with a
      new Nats-Msg-Id once the cause is gone (or an operator replays it).
    - unknown: none of these: never stored (re-send it, same command_id, new Nats-Msg-Id),
      or processed or dead-lettered longer ago than the inbox and dead-letter retention.

    Attributes:
        command_id: The command asked about.
        workspace_id: Its workspace (a lookup only ever sees its own workspace's commands).
        outcome: processed, queued, dead_lettered or unknown: whether to use the result, wait,
            give up or re-send.
        kind: processed only: the command's kind, the token of the subject it was published to.
        result: processed only: the stored result, byte for byte what the first reply carried.
        dead_letter: dead_lettered only: why.
        partial: True when the worker stopped reading the workspace's queue or dead letters
            before their end (more than it reads for one lookup, or out of time for it). Never
            with processed. A queued or dead-lettered answer is true of what was read, and a
            later dead letter may exist; unknown means not among what was read, so the command
            may be queued or dead-lettered further on: ask again later before re-sending.
    """

    command_id: str
    workspace_id: str
    outcome: Outcome
    kind: CommandKind | UnsetType = UNSET
    result: Annotated[Any, Meta(extra_json_schema=STORED_RESULT_SCHEMA)] | UnsetType = UNSET
    dead_letter: DeadLetterInfo | UnsetType = UNSET
    partial: bool = False


OUTCOME_DECODER = msgspec.json.Decoder(CommandOutcome)


def wants_outcome(body: bytes) -> bool:
    if not body:
        return False
    try:
        msgspec.json.decode(body, type=OutcomeRequest)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True
