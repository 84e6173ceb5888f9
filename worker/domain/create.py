"""The `memory.create` decision (docs/design.md, section 4, steps 1 to 7), with no I/O.

`decide_create` ends in a `CreateDecision` (worker/domain/create_decision.py): a refusal
decided before the lock, or the `SavePlan` of a save, which memory_create_batch() carries out
under the owner lock (section 5). The caller parses the tool arguments once
(`parse_tool_args`), reads the `users` rows, persona nicknames and proxy identities of
`targets.lookup_ids(cmd, args)` into the `CreateContext`, and passes the same arguments here.
What the command is answered with is rendered from the decision (create_result.py).

Ordering choices beyond the spec: the personal-memories switch is checked once the target
is resolved, not with self-teaching up front, because a target that turns out to be the bot
or a Matrix bridge user is saved server-wide and must not be refused for it. The host
protection of a proxy identity (step 7) is checked right after resolution, before the users
row and the content checks, so the model is not sent to shorten a memory that could never be
saved anyway. A resolved id shaped like a proxy id (`pk:`/`pb:`) is treated as a proxy
identity whatever kind the bot labelled its participant with (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.commands import CreateMemory
from worker.domain.arguments import InvalidArguments, ToolArguments
from worker.domain.capacity import GLOBAL_LINEAGE, eviction_blockers
from worker.domain.content import replace_user_placeholder, sanitize, utf16_length
from worker.domain.create_decision import (
    Ambiguous,
    CreateDecision,
    Disabled,
    HostProtected,
    InvalidArgs,
    InvalidContent,
    PrivacyRestricted,
    ReservedLineage,
    SavePlan,
    SecretRefused,
    UserNotFound,
)
from worker.domain.events import opaque_event_id
from worker.domain.model import CreateContext, KnownUser, Limits, Privacy, Scope, ToolScope
from worker.domain.notice import NoticeSettings, route_notice
from worker.domain.proxy import host_protection, is_synthetic_id
from worker.domain.secret_guard import find_credential, guard_on
from worker.domain.targets import Ambiguous as AmbiguousTarget
from worker.domain.targets import Resolved, bridge_name, resolve_target

__all__ = ["decide_create"]


@dataclass(frozen=True, slots=True)
class _Target:
    """Where the memory goes once `target_user` is resolved."""

    tool_scope: ToolScope
    content: str
    user: KnownUser | None  # set exactly for personal saves
    label: str | None


def _resolve(args: ToolArguments, cmd: CreateMemory, ctx: CreateContext) -> _Target | CreateDecision:
    if args.target is None:
        return _Target("server_wide", args.content, None, None)
    found = resolve_target(args.target, cmd, ctx)
    if isinstance(found, AmbiguousTarget):
        return Ambiguous(args.target, list(found.candidates[:3]))
    if not isinstance(found, Resolved):
        return UserNotFound(args.target)
    if found.kind == "bot":
        return _Target("server_wide", args.content, None, None)
    if found.kind == "matrix":
        # Bridge accounts have no user rows: the memory becomes a server fact naming them.
        content = replace_user_placeholder(args.content, bridge_name(found.label))
        return _Target("server_wide", content, None, None)
    if not ctx.workspace.personal_memories_enabled:
        return Disabled("target_user", personal=True)
    if found.kind == "proxy" or is_synthetic_id(found.id):
        # The hosts' protection comes before the users row: an identity nobody can vouch for
        # is refused as protected (fail closed), not reported as an unknown user.
        why = host_protection(ctx.proxies.get(found.id))
        if why is not None:
            return HostProtected(found.label, why)
    user = ctx.users.get(found.id)
    if user is None:
        return UserNotFound(args.target, label=found.label)
    return _Target("target_user", args.content, user, found.label)


def _plan(cmd: CreateMemory, ctx: CreateContext, limits: Limits, settings: NoticeSettings, target: _Target,
          content: str) -> SavePlan:
    user = target.user
    if user is None:
        owner_id, user_id, cap = cmd.workspace_id, None, limits.max_server_memories
    else:
        owner_id, user_id, cap = user.disc_id, user.user_id, limits.max_personal_memories
    scope: Scope = "server" if user is None else "personal"
    blocked_by = eviction_blockers(ctx.workspace, cmd.retrieval)
    return SavePlan(
        scope=scope,
        tool_scope=target.tool_scope,
        owner_id=owner_id,
        user_id=user_id,
        lineage_id=cmd.persona.lineage_id,
        persona_id=cmd.persona.id,
        persona_name=cmd.persona.name,
        content=content,
        cap=cap,
        blocked_by=blocked_by,
        decay_days=ctx.workspace.memory_decay_days,
        target_label=target.label if user is not None else None,
        teacher_id=cmd.triggerer.id if cmd.triggerer else None,
        proxy=scope == "personal" and is_synthetic_id(owner_id),
        notice=route_notice(settings, cmd.channel),
        metric_event_id=None if blocked_by else opaque_event_id(),
    )


def decide_create(cmd: CreateMemory, args: ToolArguments | InvalidArguments, ctx: CreateContext,
                  limits: Limits, settings: NoticeSettings) -> CreateDecision:
    """Run the checks of section 4 in order; the first one that fails is the answer.
    `args` is `parse_tool_args(cmd.tool_args)`, parsed once by the caller."""
    if isinstance(args, InvalidArguments):
        return InvalidArgs(args.reason)
    if not ctx.workspace.self_teaching_enabled:
        return Disabled(args.scope)
    if cmd.persona.lineage_id == GLOBAL_LINEAGE:
        return ReservedLineage(args.scope)
    target = _resolve(args, cmd, ctx)
    if not isinstance(target, _Target):
        return target
    content = sanitize(target.content)
    length = utf16_length(content)
    if length == 0 or length > limits.max_memory_length:
        return InvalidContent(target.tool_scope, length, limits.max_memory_length)
    if guard_on(ctx.workspace, limits) and (credential := find_credential(content)) is not None:
        return SecretRefused(target.tool_scope, credential)
    user = target.user
    if user is not None and user.privacy_level != Privacy.OPEN:
        # Fails closed: any level but 0 refuses, though the schema only allows 1 and 2.
        return PrivacyRestricted(target.label or user.disc_id, user.privacy_level)
    return _plan(cmd, ctx, limits, settings, target, content)
