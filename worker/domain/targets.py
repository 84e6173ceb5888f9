"""Who `target_user` names: TomoriBot's `resolveUserTarget` (src/utils/discord/targetResolver.ts,
Bredrumb/TomoriBot@a950f54c), over what the command carries and the database knows.

Every comparison is exact equality after normalizing; stages run in order, and the first
stage with any match decides, even when that match is ambiguous:

1. a Matrix id (`@local:server`) equal to a participant's id: that bridge user;
2. a proxy identity's id (worker/domain/proxy.py) equal to a participant's id;
3. a Discord id (17 to 20 digits): the guild member with that id (not a bot; not in a DM),
   else a participant with that id, else nobody: no name stage runs for an id;
4. the participants' aliases (TomoriBot's tool_target aliases), one participant whose label is
   the name winning over others that only share an alias;
5. in a DM, nobody; else the name ladder over the guild members the bot sent
   (`member_matches`): display name, the persona nickname of this lineage, the saved nickname,
   global name, username;
6. the ladder again with one of the persona's naming affixes taken off (worker/domain/naming.py);
7. the members' composed names ("Master Mika"), rebuilt from their naming layers.

TomoriBot reads stages 5 to 7 from the guild and its database, over all users; the worker reads
what the database knows of the members the bot sent (the bot runs its own naming look-ups to find
them: contracts/tool_call.py, MemberMatch). A resolved Discord member is labelled
`Display (@username)` unless the two are the same ignoring case; a bridge user's label carries
" (Matrix)". Bots are never matched by a member stage. The resolver has no notion of the bot
itself or of "self": each tool decides what a target equal to its bot means.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from contracts.tool_call import MemberMatch, Participant, ToolCall
from worker.domain.content import JS_SPACE_RUN, js_trim
from worker.domain.context import CreateContext
from worker.domain.naming import composed_name, effective_nickname, lookup_normalize, strip_affixes
from worker.domain.people import KnownUser
from worker.domain.proxy import is_proxy_identity_id
from worker.domain.tool_texts import format_bridge_label, format_discord_user_label

__all__ = [
    "MAX_CANDIDATES",
    "NOT_FOUND",
    "AmbiguousTarget",
    "NotFound",
    "Resolution",
    "Resolved",
    "Source",
    "TargetKind",
    "is_bridge_user_id",
    "is_snowflake",
    "lookup_ids",
    "normalize",
    "resolve_target",
]

TargetKind = Literal["discord", "matrix", "proxy"]
Source = Literal["legacy_id", "conversation", "guild_display_name", "persona_nickname", "db_nickname",
                 "composed_name", "global_name", "username"]
MAX_CANDIDATES = 3
COMPOSED_NAME_CANDIDATES = 50  # TomoriBot's cap on the names it rebuilds, longest nickname first


@dataclass(frozen=True, slots=True)
class Resolved:
    kind: TargetKind  # matrix: a bridge user; proxy: a message-proxy identity
    id: str
    label: str
    source: Source = "conversation"  # which stage resolved it (TomoriBot's `source`)


@dataclass(frozen=True, slots=True)
class AmbiguousTarget:
    candidates: tuple[str, ...]  # at most MAX_CANDIDATES labels, in stage order


@dataclass(frozen=True, slots=True)
class NotFound:
    pass


NOT_FOUND = NotFound()
Resolution = Resolved | AmbiguousTarget | NotFound

_BRIDGE_ID = re.compile(r"@[^:]+:[^:]+")  # TomoriBot's isBridgeUserId: a prefix test
_SNOWFLAKE = re.compile(r"[0-9]{17,20}")


@functools.lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """TomoriBot's `normalizeParticipantAlias`: trim, drop every leading `@`, trim, lowercase,
    collapse whitespace. Cached: a conversation's participants and members come with every
    create of it, so the same names are compared again and again."""
    return JS_SPACE_RUN.sub(" ", js_trim(js_trim(text).lstrip("@")).lower())


def is_snowflake(value: str) -> bool:
    """TomoriBot's `isDiscordSnowflake`: 17 to 20 ASCII digits once trimmed."""
    return _SNOWFLAKE.fullmatch(js_trim(value)) is not None


def is_bridge_user_id(value: str) -> bool:
    return _BRIDGE_ID.match(value) is not None


def _kind(participant: Participant) -> TargetKind:
    """By the id's shape first (TomoriBot knows no other), then as the bot labelled it."""
    if is_bridge_user_id(participant.id):
        return "matrix"
    if is_proxy_identity_id(participant.id):
        return "proxy"
    return participant.kind


def participant_label(participant: Participant) -> str:
    return participant.label or participant.primary_label or participant.id


def _reference(participant: Participant, source: Source) -> Resolved:
    kind = _kind(participant)
    label = participant_label(participant)
    return Resolved(kind, participant.id, format_bridge_label(label) if kind == "matrix" else label, source)


def _member(member: MemberMatch, source: Source) -> Resolved:
    label = format_discord_user_label(member.display_name or member.nickname, member.global_name, member.username)
    return Resolved("discord", member.id, label or member.id, source)


def _decide(found: Sequence[Resolved]) -> Resolution | None:
    """Distinct ids in order: one resolves, several are ambiguous, none lets the next stage run."""
    unique = list({r.id: r for r in reversed(found)}.values())[::-1]  # first occurrence wins
    if not unique:
        return None
    if len(unique) == 1:
        return unique[0]
    return AmbiguousTarget(tuple(r.label for r in unique[:MAX_CANDIDATES]))


def _by_id(raw: str, cmd: ToolCall) -> Resolution | None:
    participants = cmd.participants
    if is_bridge_user_id(raw) or is_proxy_identity_id(raw):
        for participant in participants:
            if participant.id == raw:
                return _reference(participant, "legacy_id")
    if _SNOWFLAKE.fullmatch(raw) is None:
        return None
    if not cmd.channel.is_dm:
        for member in cmd.member_matches:
            if member.id == raw and not member.is_bot:
                return _member(member, "legacy_id")
    for participant in participants:
        if participant.id == raw:
            return _reference(participant, "legacy_id")
    return NOT_FOUND


def _by_alias(query: str, participants: Iterable[Participant]) -> Resolution | None:
    matches = [p for p in participants if any(normalize(alias) == query for alias in p.aliases)]
    primary_ids = {p.id for p in matches if normalize(p.label) == query}
    found = [_reference(p, "conversation") for p in matches]
    primary = [r for r in found if r.id in primary_ids]
    # One match on its own label beats matches on other people's secondary aliases.
    return _decide(primary if len({r.id for r in primary}) == 1 else found)


_MemberName = Callable[[MemberMatch, "KnownUser | None"], "str | None"]


def _display_name(member: MemberMatch, _: KnownUser | None) -> str | None:
    return member.display_name or member.nickname or member.global_name or member.username


def _persona_nickname(_: MemberMatch, user: KnownUser | None) -> str | None:
    return user.persona_naming.nickname if user and user.persona_naming else None


def _saved_nickname(_: MemberMatch, user: KnownUser | None) -> str | None:
    return user.nickname if user else None


def _global_name(member: MemberMatch, _: KnownUser | None) -> str | None:
    return member.global_name


def _username(member: MemberMatch, _: KnownUser | None) -> str | None:
    return member.username


# (stage, the member's name there, whether it is compared as the database compares it)
_LADDER: tuple[tuple[Source, _MemberName, bool], ...] = (
    ("guild_display_name", _display_name, False),
    ("persona_nickname", _persona_nickname, True),
    ("db_nickname", _saved_nickname, True),
    ("global_name", _global_name, False),
    ("username", _username, False),
)


def _ladder(query: str, members: Sequence[MemberMatch], ctx: CreateContext) -> Resolution | None:
    looked_up = lookup_normalize(query)
    for source, name_of, in_database in _LADDER:
        found = []
        for member in members:
            name = name_of(member, ctx.users.get(member.id))
            if name is None:
                continue
            if (lookup_normalize(name) == looked_up) if in_database else (normalize(name) == query):
                found.append(_member(member, source))
        decided = _decide(found)
        if decided is not None:
            return decided
    return None


def _by_composed_name(query: str, members: Sequence[MemberMatch], cmd: ToolCall,
                      ctx: CreateContext) -> Resolution | None:
    looked_up = lookup_normalize(query)
    candidates: list[tuple[int, MemberMatch, KnownUser]] = []
    for member in members:
        user = ctx.users.get(member.id)
        nickname = effective_nickname(user) if user else None
        if user is not None and nickname is not None and lookup_normalize(nickname) in looked_up:
            candidates.append((len(nickname), member, user))
    candidates.sort(key=lambda c: c[0], reverse=True)
    found = [_member(member, "composed_name") for _, member, user in candidates[:COMPOSED_NAME_CANDIDATES]
             if normalize(composed_name(user, cmd.persona.naming) or "") == query]
    return _decide(found)


def resolve_target(raw: str, cmd: ToolCall, ctx: CreateContext) -> Resolution:
    """Resolve the model's `target_user` text (stages in the module's docstring)."""
    query = normalize(raw)
    if not query:
        return NOT_FOUND
    requested = js_trim(raw)
    found = _by_id(requested, cmd) or _by_alias(query, cmd.participants)
    if found is not None:
        return found
    if cmd.channel.is_dm:
        return NOT_FOUND
    members = [member for member in cmd.member_matches if not member.is_bot]
    found = _ladder(query, members, ctx)
    if found is None and (stripped := strip_affixes(requested, cmd.persona.naming)) is not None:
        found = _ladder(normalize(stripped), members, ctx)
    return found or _by_composed_name(query, members, cmd, ctx) or NOT_FOUND


def lookup_ids(cmd: ToolCall, target: str | None) -> tuple[str, ...]:
    """The ids whose `users` rows (with naming preferences, blacklist flag, proxy hosts) a tool's
    decision may read: the triggerer's and, when a `target` is requested, every id it may
    resolve to. Empty without a triggerer and target, so the caller can skip the query."""
    ids: list[str] = [cmd.triggerer.id] if cmd.triggerer is not None else []
    if target is not None and normalize(target):
        requested = js_trim(target)
        if is_proxy_identity_id(requested) or _SNOWFLAKE.fullmatch(requested):
            ids.append(requested)
        ids.extend(p.id for p in cmd.participants if _kind(p) != "matrix")
        if not cmd.channel.is_dm:
            ids.extend(m.id for m in cmd.member_matches if not m.is_bot)
    return tuple(dict.fromkeys(ids))
