"""Who `target_user` names: the resolution ladder of docs/design.md, section 4 step 4.

Every comparison is exact equality after `normalize`; there is no fuzzy or prefix matching,
because a memory filed under the wrong person is worse than asking the model to clarify.
Stages run in order and the first stage with any match decides, even when that match is
ambiguous. Beyond the spec:

- A Discord mention (`<@id>` or `<@!id>`) is read as the bare id it wraps.
- The snowflake stage also recognises `bot_user_id` itself, so the bot's own id means the
  bot even when the member search did not return it. Other bots' ids never resolve: bots
  are never memory targets.
- The display-name stage uses a member's guild `nickname` when `display_name` is absent
  (that is what Discord displays).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from contracts.commands import MemberMatch, Participant, ToolCall
from worker.domain.arguments import InvalidArguments, ToolArguments
from worker.domain.model import CreateContext

__all__ = [
    "MAX_CANDIDATES",
    "NOT_FOUND",
    "Ambiguous",
    "NotFound",
    "Resolution",
    "Resolved",
    "TargetKind",
    "bridge_name",
    "lookup_ids",
    "normalize",
    "resolve_target",
]

TargetKind = Literal["discord", "matrix", "proxy", "bot"]
MAX_CANDIDATES = 3
SELF = "self"


@dataclass(frozen=True, slots=True)
class Resolved:
    kind: TargetKind
    id: str
    label: str


@dataclass(frozen=True, slots=True)
class Ambiguous:
    candidates: tuple[str, ...]  # at most MAX_CANDIDATES labels, in stage order


@dataclass(frozen=True, slots=True)
class NotFound:
    pass


NOT_FOUND = NotFound()
Resolution = Resolved | Ambiguous | NotFound

# Shapes are tested on the normalized input (leading `@` gone, lowercase).
_MATRIX_ID = re.compile(r"[^\s:@]+:\S+")
_PROXY_ID = re.compile(r"pk:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|pb:\d+")
_SNOWFLAKE = re.compile(r"\d{17,20}")
_MENTION = re.compile(r"<@!?(\d{17,20})>")
_MATRIX_SUFFIX = re.compile(r"\s+\(Matrix\)$")


@functools.lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Trim, drop leading `@`, lowercase, collapse whitespace. Cached: a conversation's
    participants and members come with every create of it, so the same names are compared
    again and again."""
    return " ".join(text.strip().lstrip("@").lower().split())


def _snowflake(normalized: str) -> str | None:
    if _SNOWFLAKE.fullmatch(normalized):
        return normalized
    mention = _MENTION.fullmatch(normalized)
    return mention.group(1) if mention else None


def participant_label(participant: Participant) -> str:
    return participant.label or participant.primary_label or participant.id


def bridge_name(label: str) -> str:
    """The name a Matrix bridge user goes by: its label without the bridge's ` (Matrix)` marker."""
    return _MATRIX_SUFFIX.sub("", label).strip() or label


def _member_label(member: MemberMatch) -> str:
    return member.display_name or member.nickname or member.global_name or member.username or member.id


def _member_candidate_label(member: MemberMatch) -> str:
    """The label plus the username when it differs, so the model can name the one it means."""
    label = _member_label(member)
    username = member.username
    if username and normalize(username) != normalize(label):
        return f"{label} (@{username})"
    return label


def _decide(matches: dict[str, tuple[Resolved, str]]) -> Resolution | None:
    """One distinct id resolves, several are ambiguous, none lets the next stage run."""
    if not matches:
        return None
    if len(matches) == 1:
        return next(iter(matches.values()))[0]
    return Ambiguous(tuple(label for _, label in list(matches.values())[:MAX_CANDIDATES]))


def _by_matrix_id(query: str, participants: Iterable[Participant]) -> Resolution | None:
    for participant in participants:
        if participant.kind == "matrix" and normalize(participant.id) == query:
            return Resolved("matrix", participant.id, participant_label(participant))
    return None


def _by_proxy_id(query: str, participants: Iterable[Participant]) -> Resolution | None:
    for participant in participants:
        if normalize(participant.id) == query:
            return Resolved(participant.kind, participant.id, participant_label(participant))
    return None


def _by_snowflake(snowflake: str, cmd: ToolCall) -> Resolution | None:
    if snowflake == cmd.bot_user_id:
        return Resolved("bot", snowflake, cmd.persona.name)
    for participant in cmd.participants:
        if participant.id == snowflake:
            return Resolved(participant.kind, participant.id, participant_label(participant))
    for member in cmd.member_matches:
        if member.id == snowflake and not member.is_bot:
            return Resolved("discord", member.id, _member_label(member))
    return None


def _participant_matches(query: str, participant: Participant) -> bool:
    if normalize(participant.label) == query:
        return True
    if participant.primary_label and normalize(participant.primary_label) == query:
        return True
    return any(normalize(alias) == query for alias in participant.aliases)


def _by_participant_alias(query: str, participants: Iterable[Participant]) -> Resolution | None:
    matches: dict[str, tuple[Resolved, str]] = {}
    primary: dict[str, tuple[Resolved, str]] = {}
    for participant in participants:
        if participant.id in matches or not _participant_matches(query, participant):
            continue
        label = participant_label(participant)
        entry = (Resolved(participant.kind, participant.id, label), label)
        matches[participant.id] = entry
        if participant.primary_label and normalize(participant.primary_label) == query:
            primary[participant.id] = entry
    # A match on someone's primary name beats matches on other people's secondary aliases.
    if len(matches) > 1 and len(primary) == 1:
        return _decide(primary)
    return _decide(matches)


def _member_stages(ctx: CreateContext) -> tuple[Callable[[MemberMatch], str | None], ...]:
    def display_name(member: MemberMatch) -> str | None:
        return member.display_name or member.nickname

    def persona_nickname(member: MemberMatch) -> str | None:
        return ctx.persona_nicknames.get(member.id)

    def saved_nickname(member: MemberMatch) -> str | None:
        user = ctx.users.get(member.id)
        return user.nickname if user else None

    def global_name(member: MemberMatch) -> str | None:
        return member.global_name

    def username(member: MemberMatch) -> str | None:
        return member.username

    return (display_name, persona_nickname, saved_nickname, global_name, username)


def _by_member_names(query: str, members: list[MemberMatch], ctx: CreateContext) -> Resolution | None:
    for name_of in _member_stages(ctx):
        matches: dict[str, tuple[Resolved, str]] = {}
        for member in members:
            name = name_of(member)
            if name and member.id not in matches and normalize(name) == query:
                matches[member.id] = (
                    Resolved("discord", member.id, _member_label(member)),
                    _member_candidate_label(member),
                )
        decided = _decide(matches)
        if decided is not None:
            return decided
    return None


def _ladder(query: str, cmd: ToolCall, ctx: CreateContext) -> Resolution:
    participants = cmd.participants
    if ":" in query:
        if _MATRIX_ID.fullmatch(query) and (found := _by_matrix_id(query, participants)):
            return found
        if _PROXY_ID.fullmatch(query) and (found := _by_proxy_id(query, participants)):
            return found
    snowflake = _snowflake(query)
    if snowflake is not None and (found := _by_snowflake(snowflake, cmd)):
        return found
    if found := _by_participant_alias(query, participants):
        return found
    if cmd.channel.is_dm:
        return NOT_FOUND
    members = [member for member in cmd.member_matches if not member.is_bot]
    return _by_member_names(query, members, ctx) or NOT_FOUND


def resolve_target(raw: str, cmd: ToolCall, ctx: CreateContext) -> Resolution:
    """Resolve the model's `target_user` text; the bot itself comes back with kind `bot`."""
    query = normalize(raw)
    if not query:
        return NOT_FOUND
    if query == SELF:
        return Resolved("bot", cmd.bot_user_id, cmd.persona.name)
    found = _ladder(query, cmd, ctx)
    if isinstance(found, Resolved) and found.id == cmd.bot_user_id and found.kind != "bot":
        return Resolved("bot", found.id, cmd.persona.name)
    return found


def lookup_ids(cmd: ToolCall, args: ToolArguments | InvalidArguments) -> tuple[str, ...]:
    """Discord ids whose `users` rows and persona nicknames `decide_create` may read;
    `args` is `parse_tool_args(cmd.tool_args)`, parsed once for the whole create.

    Empty when the command needs no target resolution (bad arguments, server-wide, `self`),
    so the caller can skip the query.
    """
    if not isinstance(args, ToolArguments) or args.target is None:
        return ()
    query = normalize(args.target)
    if not query or query == SELF:
        return ()
    ids: list[str] = []
    snowflake = _snowflake(query)
    if snowflake is not None:
        ids.append(snowflake)
    elif _PROXY_ID.fullmatch(query):
        ids.append(query)
    ids.extend(p.id for p in cmd.participants if p.kind != "matrix")
    if not cmd.channel.is_dm:
        ids.extend(m.id for m in cmd.member_matches if not m.is_bot)
    unique = dict.fromkeys(ids)
    unique.pop(cmd.bot_user_id, None)
    return tuple(unique)
