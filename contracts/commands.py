"""Commands bots send to the worker (docs/design.md, sections 3.2, 3.3 and 8)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

# PostgreSQL text and jsonb cannot hold NUL: a string with one is refused at decoding, with
# the field's path, instead of failing the database on every retry.
_NO_NUL = r"^[^\x00]*$"
CommandId = Annotated[str, Meta(min_length=1, max_length=128, pattern=_NO_NUL)]
DiscordId = Annotated[str, Meta(min_length=1, max_length=64, pattern=_NO_NUL)]
ShortText = Annotated[str, Meta(max_length=512, pattern=_NO_NUL)]
# A subject the worker can publish to: dot-separated tokens, no wildcards, no whitespace.
_REPLY_SUBJECT = r"^[^\s*>.]+(\.[^\s*>.]+)*$"
# Where the worker may publish results: the operator's REPLY_SUBJECT_PREFIXES, by default
# reply inboxes only (never event or command subjects).
DEFAULT_REPLY_PREFIXES = ("_INBOX.",)
REPLY_SUBJECT_RULE = (
    "reply_to must start with one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`; a bot under "
    "per-role permissions has its own prefix, which the operator adds). The worker publishes nowhere else: "
    "a command whose reply_to is not allowed is not applied, gets no reply, and is dead-lettered with reason "
    "invalid_command; the result lookup then answers outcome dead_lettered with reply_to_allowed false.")
ReplySubject = Annotated[str, Meta(
    max_length=256, pattern=_REPLY_SUBJECT,
    description="A NATS subject (no wildcards) the worker publishes the result to. " + REPLY_SUBJECT_RULE)]
IssuedAt = Annotated[datetime, Meta(extra_json_schema={"format": "date-time"},
                                    description="RFC 3339, set by the bot.")]
_REPLY_SUBJECT_RE = re.compile(_REPLY_SUBJECT)
# Ids of the bot's database: PostgreSQL integer columns.
Int32 = Annotated[int, Meta(ge=0, le=2**31 - 1)]
# Persona lineages: TomoriBot's lineage columns are bigint (widened from int32, additively).
LineageId = Annotated[int, Meta(ge=0, le=2**63 - 1)]
MemoryId = Annotated[int, Meta(ge=1, le=2**63 - 1)]


def is_reply_subject(value: str) -> bool:
    return len(value) <= 256 and _REPLY_SUBJECT_RE.match(value) is not None


class Envelope(Struct, kw_only=True, frozen=True):
    """Fields every command carries."""

    command_id: CommandId
    issued_at: IssuedAt
    reply_to: ReplySubject | None = None
    workspace_id: DiscordId


class ReplyProbe(Struct):
    """The least a broken command may still tell us: where to send the refusal."""

    command_id: Any = None
    reply_to: Any = None


class Persona(Struct, frozen=True):
    id: Int32
    lineage_id: LineageId
    name: ShortText


class Triggerer(Struct, frozen=True):
    id: DiscordId
    name: ShortText


class Channel(Struct, frozen=True, kw_only=True):
    id: DiscordId
    is_dm: bool = False
    is_private: bool = False
    everyone_can_view: bool = True
    url: ShortText | None = None


class Participant(Struct, frozen=True, kw_only=True):
    id: Annotated[str, Meta(min_length=1, max_length=256, pattern=_NO_NUL)]
    kind: Literal["discord", "matrix", "proxy"] = "discord"
    label: ShortText = ""
    primary_label: ShortText | None = None
    aliases: Annotated[list[ShortText], Meta(max_length=64)] = []


class MemberMatch(Struct, frozen=True, kw_only=True):
    id: DiscordId
    display_name: ShortText | None = None
    nickname: ShortText | None = None
    global_name: ShortText | None = None
    username: ShortText | None = None
    is_bot: bool = False


class Retrieval(Struct, frozen=True, kw_only=True):
    rag_available: bool = False
    embedding_model: ShortText | None = None
    embedding_credentials: bool = False


class CreateMemory(Envelope, kw_only=True, frozen=True):
    """`memory.create`: the model's `create_long_term_memory` tool call."""

    # Deliberately loose: a model's bad arguments are a normal outcome, not a poison message.
    tool_args: Any = None
    persona: Persona
    bot_user_id: DiscordId
    triggerer: Triggerer | None = None
    channel: Channel
    participants: Annotated[list[Participant], Meta(max_length=256)] = []
    member_matches: Annotated[list[MemberMatch], Meta(max_length=256)] = []
    retrieval: Retrieval = Retrieval()


# Long enough for any panel entry; MAX_MEMORY_LENGTH is checked by the worker with its own
# refusal (content-too-long), so only absurd payloads fail decoding.
PanelText = Annotated[str, Meta(max_length=20_000, pattern=_NO_NUL)]
SyntheticId = Annotated[str, Meta(min_length=1, max_length=128, pattern=_NO_NUL)]
MemoryScope = Literal["server", "personal"]


class Actor(Struct, frozen=True, kw_only=True):
    id: DiscordId
    # ManageGuild in a server; anyone in a DM.
    is_manager: bool = False


class ManualMemory(Envelope, kw_only=True, frozen=True):
    """`memory.manual`: the `/memories` and `/personal memories` panels."""

    actor: Actor
    scope: MemoryScope
    action: Literal["add", "add_batch", "edit", "remove"]
    lineage_id: LineageId
    persona_id: Int32 | None = None
    identity_id: SyntheticId | None = None
    memory_id: MemoryId | None = None
    content: PanelText | None = None
    contents: Annotated[list[PanelText], Meta(max_length=2000)] | None = None
    tags: Annotated[str, Meta(max_length=2000, pattern=_NO_NUL)] | Annotated[
        list[ShortText], Meta(max_length=100)] | None = None


class MemoryRef(Struct, frozen=True):
    scope: MemoryScope
    memory_id: MemoryId


class ReinforceMemories(Envelope, kw_only=True, frozen=True):
    """`memory.reinforce`: the memories a reply used."""

    lineage_id: LineageId
    memories: Annotated[list[MemoryRef], Meta(max_length=500)] = []


class SeedBio(Envelope, kw_only=True, frozen=True):
    """`memory.seed_bio`: the one-time bio snapshot of a new proxy identity."""

    identity_user_id: SyntheticId
    is_new_identity: bool
    bio: PanelText | None = None


COMMAND_TYPES: dict[str, type[Envelope]] = {
    "create": CreateMemory,
    "manual": ManualMemory,
    "reinforce": ReinforceMemories,
    "seed_bio": SeedBio,
}


def decoder_for(kind: str) -> msgspec.json.Decoder:
    return _DECODERS[kind]


_DECODERS = {kind: msgspec.json.Decoder(t) for kind, t in COMMAND_TYPES.items()}
PROBE_DECODER = msgspec.json.Decoder(ReplyProbe)
