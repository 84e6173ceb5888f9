"""The `memory.create` decision (docs/design.md, section 4, steps 1 to 7), with no I/O.

`decide_create` either refuses with a finished `CommandResult` or returns a `SavePlan` for
the persistence layer, which then applies the capacity rule (section 5) under the owner lock
and builds the final result with `worker.domain.messages`. The caller first loads the
`users` rows and persona nicknames of `targets.lookup_ids(cmd)` into the `CreateContext`.

Ordering choices beyond the spec: the personal-memories switch is checked once the target
is resolved, not with self-teaching up front, because a target that turns out to be the bot
or a Matrix bridge user is saved server-wide and must not be refused for it. The host
protection of a proxy identity (step 7) is checked right after resolution, before the users
row and the content checks, so the model is not sent to shorten a memory that could never be
saved anyway. A resolved id shaped like a proxy id (`pk:`/`pb:`) is treated as a proxy
identity whatever kind the bot labelled its participant with (fail closed). The caller also
loads `ctx.proxies` for the ids of `targets.lookup_ids(cmd)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.commands import CreateMemory, Retrieval
from contracts.results import CacheKey, CommandResult
from worker.domain import messages
from worker.domain.arguments import InvalidArguments, ToolArguments, parse_tool_args
from worker.domain.capacity import GLOBAL_LINEAGE, eviction_permitted
from worker.domain.content import replace_user_placeholder, sanitize, utf16_length
from worker.domain.model import CreateContext, KnownUser, LimitReason, Limits, SavePlan, ToolScope, Workspace
from worker.domain.proxy import host_protection, is_synthetic_id
from worker.domain.targets import Ambiguous, Resolved, bridge_name, resolve_target

__all__ = [
    "at_cap_refusal",
    "decide_create",
    "eviction_block_reason",
    "over_cap_refusal",
]

PRIVACY_OPEN = 0  # users.privacy_level: 1 (partial) and 2 (full) both refuse personal saves


@dataclass(frozen=True, slots=True)
class _Target:
    """Where the memory goes once `target_user` is resolved."""

    tool_scope: ToolScope
    content: str
    user: KnownUser | None  # set exactly for personal saves
    label: str | None


def _resolve(args: ToolArguments, cmd: CreateMemory, ctx: CreateContext) -> _Target | CommandResult:
    if args.target is None:
        return _Target("server_wide", args.content, None, None)
    found = resolve_target(args.target, cmd, ctx)
    if isinstance(found, Ambiguous):
        return messages.ambiguous(cmd, args.target, found.candidates)
    if not isinstance(found, Resolved):
        return messages.user_not_found(cmd, args.target)
    if found.kind == "bot":
        return _Target("server_wide", args.content, None, None)
    if found.kind == "matrix":
        # Bridge accounts have no user rows: the memory becomes a server fact naming them.
        content = replace_user_placeholder(args.content, bridge_name(found.label))
        return _Target("server_wide", content, None, None)
    if not ctx.workspace.personal_memories_enabled:
        return messages.disabled(cmd, "target_user", personal=True)
    if found.kind == "proxy" or is_synthetic_id(found.id):
        # The hosts' protection comes before the users row: an identity nobody can vouch for
        # is refused as protected (fail closed), not reported as an unknown user.
        why = host_protection(ctx.proxies.get(found.id))
        if why is not None:
            return messages.host_protected(cmd, found.label, why)
    user = ctx.users.get(found.id)
    if user is None:
        return messages.user_not_found(cmd, args.target, label=found.label)
    return _Target("target_user", args.content, user, found.label)


def _plan(cmd: CreateMemory, ctx: CreateContext, limits: Limits, target: _Target, content: str) -> SavePlan:
    user = target.user
    if user is None:
        owner_id, user_id, cap = cmd.workspace_id, None, limits.max_server_memories
        invalidate = CacheKey("tomori_state", cmd.workspace_id)
    else:
        owner_id, user_id, cap = user.disc_id, user.user_id, limits.max_personal_memories
        invalidate = CacheKey("user", user.disc_id)
    may_evict, _ = eviction_permitted(ctx.workspace, cmd.retrieval)
    return SavePlan(
        scope="server" if user is None else "personal",
        tool_scope=target.tool_scope,
        owner_id=owner_id,
        user_id=user_id,
        lineage_id=cmd.persona.lineage_id,
        persona_id=cmd.persona.id,
        content=content,
        cap=cap,
        may_evict=may_evict,
        decay_days=ctx.workspace.memory_decay_days,
        target_label=target.label if user is not None else None,
        invalidate=(invalidate,),
    )


def decide_create(cmd: CreateMemory, ctx: CreateContext, limits: Limits) -> CommandResult | SavePlan:
    """Run the checks of section 4 in order; the first one that fails is the answer."""
    args = parse_tool_args(cmd.tool_args)
    if isinstance(args, InvalidArguments):
        return messages.invalid_args(cmd, args.reason)
    if not ctx.workspace.self_teaching_enabled:
        return messages.disabled(cmd, args.scope)
    if cmd.persona.lineage_id == GLOBAL_LINEAGE:
        return messages.internal_error(
            cmd, args.scope, "the active persona has lineage 0, which is reserved for global memories"
        )
    target = _resolve(args, cmd, ctx)
    if isinstance(target, CommandResult):
        return target
    content = sanitize(target.content)
    length = utf16_length(content)
    if length == 0 or length > limits.max_memory_length:
        return messages.invalid_content(cmd, target.tool_scope, length, limits.max_memory_length)
    user = target.user
    if user is not None and user.privacy_level != PRIVACY_OPEN:
        # Fails closed: any level but 0 refuses, though the schema only allows 1 and 2.
        return messages.privacy_restricted(cmd, target.label or user.disc_id, user.privacy_level)
    return _plan(cmd, ctx, limits, target, content)


def eviction_block_reason(workspace: Workspace, retrieval: Retrieval) -> str | None:
    """Why a save at the cap may not replace a row, or None when it may."""
    return eviction_permitted(workspace, retrieval)[1]


def at_cap_refusal(cmd: CreateMemory, plan: SavePlan, why_not: str | None) -> CommandResult:
    """The refusal for an owner at the cap; `why_not` None means nothing was eligible.

    `data.current_count` is 0 here: the caller sets it to the count it read under the lock.
    """
    reason: LimitReason = "nothing_eligible" if why_not is None else "eviction_not_permitted"
    return messages.limit_exceeded(cmd, plan, 0, reason, why_not)


def over_cap_refusal(cmd: CreateMemory, plan: SavePlan) -> CommandResult:
    """The refusal for an owner above the cap; the caller sets `data.current_count`."""
    return messages.limit_exceeded(cmd, plan, 0, "over_cap", None)
