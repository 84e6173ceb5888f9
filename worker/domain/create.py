"""The `memory.create` decision before persistence (docs/design.md, section 4, steps 1 to 7), with no I/O.

`decide_create` either refuses with a finished `CommandResult` or returns a `SavePlan`;
worker/domain/save.py turns the plan into everything the locked save may answer, and the
database applies the capacity rule (section 5) under the owner lock. The caller parses the
tool arguments once (`parse_tool_args`), reads the `users` rows, persona nicknames and proxy
identities of `targets.lookup_ids(cmd, args)` into the `CreateContext`, and passes the same
arguments here.

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
from contracts.results import CommandResult
from worker.domain import messages
from worker.domain.arguments import InvalidArguments, ToolArguments
from worker.domain.capacity import GLOBAL_LINEAGE, eviction_permitted, limit_reason
from worker.domain.content import replace_user_placeholder, sanitize, utf16_length
from worker.domain.model import CapacityAction, CreateContext, KnownUser, Limits, Privacy, SavePlan, Scope, ToolScope
from worker.domain.owner import cache_key
from worker.domain.proxy import host_protection, is_synthetic_id
from worker.domain.targets import Ambiguous, Resolved, bridge_name, resolve_target

__all__ = [
    "decide_create",
    "limit_refusal",
]


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
    else:
        owner_id, user_id, cap = user.disc_id, user.user_id, limits.max_personal_memories
    scope: Scope = "server" if user is None else "personal"
    _, eviction_blocked = eviction_permitted(ctx.workspace, cmd.retrieval)
    return SavePlan(
        scope=scope,
        tool_scope=target.tool_scope,
        owner_id=owner_id,
        user_id=user_id,
        lineage_id=cmd.persona.lineage_id,
        persona_id=cmd.persona.id,
        content=content,
        cap=cap,
        eviction_blocked=eviction_blocked,
        decay_days=ctx.workspace.memory_decay_days,
        target_label=target.label if user is not None else None,
        invalidate=(cache_key(scope, owner_id),),
    )


def decide_create(cmd: CreateMemory, args: ToolArguments | InvalidArguments, ctx: CreateContext,
                  limits: Limits) -> CommandResult | SavePlan:
    """Run the checks of section 4 in order; the first one that fails is the answer.
    `args` is `parse_tool_args(cmd.tool_args)`, parsed once by the caller."""
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
    if user is not None and user.privacy_level != Privacy.OPEN:
        # Fails closed: any level but 0 refuses, though the schema only allows 1 and 2.
        return messages.privacy_restricted(cmd, target.label or user.disc_id, user.privacy_level)
    return _plan(cmd, ctx, limits, target, content)


def limit_refusal(cmd: CreateMemory, plan: SavePlan, action: CapacityAction, current_count: int) -> CommandResult:
    """The refusal of a save the capacity rule refused (`refuse_at_cap` or `refuse_over_cap`);
    `current_count` is the owner's count the database read under the lock."""
    reason = limit_reason(action, plan.may_evict)
    if reason is None:
        raise ValueError(f"{action} is not a refusing capacity action")
    return messages.limit_exceeded(cmd, plan, current_count, reason, plan.eviction_blocked)
