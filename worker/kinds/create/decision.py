"""The `memory.create` decision (docs/design.md, section 4), with no I/O: TomoriBot's
`MemoryTool.execute` (src/tools/functionCalls/memoryTool.ts, Bredrumb/TomoriBot@60e529b0), in
its order of checks.

`decide_create` ends in a `CreateDecision` (worker/kinds/create/record.py): a refusal
decided before the lock, or the `SavePlan` of a save, which memory_create_batch() carries out
under the owner lock (section 5: the capacity limit, and privacy and host protection read again).
The caller parses the tool arguments once (`parse_tool_args`), reads the `users` rows of
`targets.lookup_ids(cmd, args.target)` into the `CreateContext` (with the workspace settings),
and passes the same arguments here. What the command is answered with is rendered from the
decision (rendering.py), in TomoriBot's words (texts.py).

The order: the parameter check; self-teaching; the critical state (a triggerer with a users row,
a persona id); blank content; for target_user the target (required, resolved; the bot, or
"self" once resolved, and a Matrix bridge user turn the save server-wide, the latter with
`{user}` replaced by their name); the content cleaned and measured; the lineage (0 is reserved);
for a personal save the users row, a proxy identity's hosts, the person's privacy. Personal
memories being off saves anyway and changes only the notice's footer.

The worker's deliberate differences from TomoriBot (docs/design.md, section 4): a proxy
identity whose hosts cannot be found is refused (TomoriBot saves); any privacy level but 0
refuses (TomoriBot: exactly 1 and 2; the schema allows no other); NUL characters are refused
(PostgreSQL cannot store them); a legacy target name that is no string is refused (TomoriBot
throws); at the cap a dormant memory may be replaced (section 5).
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.kinds.create import CreateMemory
from worker.domain.content import js_trim, replace_user_placeholder, sanitize, utf16_length
from worker.domain.context import CreateContext
from worker.domain.events import opaque_event_id
from worker.domain.notice import NoticeSettings, route_notice
from worker.domain.owner import GLOBAL_LINEAGE
from worker.domain.people import KnownUser, Privacy
from worker.domain.proxy import host_protection, is_proxy_identity_id
from worker.domain.scope import Scope, ToolScope
from worker.domain.secret_guard import find_credential, guard_on
from worker.domain.targets import AmbiguousTarget, Resolved, resolve_target
from worker.domain.tool_arguments import ParameterCheck
from worker.domain.tool_texts import bridge_display_name
from worker.domain.workspace import Limits
from worker.kinds.create.arguments import InvalidArguments, ToolArguments
from worker.kinds.create.capacity import eviction_blockers
from worker.kinds.create.record import (
    CreateDecision,
    CreateSecretRefused,
    CreateTargetAmbiguous,
    Disabled,
    HostProtected,
    InvalidArgs,
    InvalidContent,
    MissingState,
    PrivacyRestricted,
    ReservedLineage,
    SavePlan,
    UserNotFound,
)

__all__ = ["decide_create"]

SELF = "self"


@dataclass(frozen=True, slots=True)
class _Target:
    """Where the memory goes once `target_user` is resolved."""

    tool_scope: ToolScope
    content: str  # as the model wrote it, `{user}` replaced for a bridge user
    found: Resolved | None  # set exactly for personal saves


def _critical_state(cmd: CreateMemory, ctx: CreateContext) -> MissingState | None:
    if cmd.triggerer is None:
        return MissingState("triggerer")
    if cmd.triggerer.id not in ctx.users:
        return MissingState("triggerer_user")
    if cmd.persona.id == 0:
        return MissingState("persona_id")
    return None


def _target(args: ToolArguments, cmd: CreateMemory, ctx: CreateContext) -> _Target | CreateDecision:
    if args.scope == "server_wide":
        return _Target("server_wide", args.content, None)
    if args.target is None:
        return InvalidArgs(blank="target_user")
    if "\x00" in args.target:
        return InvalidArgs(nul_in=args.target_parameter or "target_user")
    found = resolve_target(args.target, cmd, ctx)
    if isinstance(found, AmbiguousTarget):
        return CreateTargetAmbiguous(args.target, list(found.candidates))
    if not isinstance(found, Resolved):
        return UserNotFound(args.target)
    if found.id == cmd.bot_user_id or args.target.lower() == SELF:
        return _Target("server_wide", args.content, None)
    if found.kind == "matrix":
        # Bridge accounts have no user rows: the memory becomes a server fact naming them.
        return _Target("server_wide", replace_user_placeholder(args.content, bridge_display_name(found.label)), None)
    return _Target("target_user", args.content, found)


def _personal_refusal(requested: str, found: Resolved, ctx: CreateContext) -> CreateDecision | KnownUser:
    user = ctx.users.get(found.id)
    if user is None:
        return UserNotFound(requested, label=found.label)
    if found.kind == "proxy" or is_proxy_identity_id(found.id):
        why = host_protection(ctx.proxies.get(found.id))
        if why is not None:
            return HostProtected(found.label, why)
    if user.privacy_level != Privacy.OPEN:
        # TomoriBot blocks exactly 1 and 2; any other level reads as full (fail closed).
        return PrivacyRestricted(found.label, user.privacy_level)
    return user


def _plan(cmd: CreateMemory, ctx: CreateContext, limits: Limits, settings: NoticeSettings, target: _Target,
          user: KnownUser | None, content: str) -> SavePlan:
    if user is None:
        owner_id, user_id, cap = cmd.workspace_id, None, limits.max_server_memories
    else:
        owner_id, user_id, cap = user.disc_id, user.user_id, limits.max_personal_memories
    scope: Scope = "server" if user is None else "personal"
    blocked_by = eviction_blockers(ctx.workspace, cmd.retrieval)
    found = target.found
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
        target_label=found.label if found is not None else None,
        teacher_id=cmd.triggerer.id if cmd.triggerer else None,
        proxy=found is not None and (found.kind == "proxy" or is_proxy_identity_id(owner_id)),
        notice=route_notice(settings, cmd.channel),
        metric_event_id=None if blocked_by else opaque_event_id(),
        personalization_enabled=ctx.workspace.personal_memories_enabled,
        target_blacklisted=user is not None and user.blacklisted,
    )


def decide_create(cmd: CreateMemory, args: ToolArguments | InvalidArguments, ctx: CreateContext,
                  limits: Limits, settings: NoticeSettings) -> CreateDecision:
    """Run the checks in TomoriBot's order; the first one that fails is the answer.
    `args` is `parse_tool_args(cmd.tool_args)`, parsed once by the caller."""
    if isinstance(args, InvalidArguments):
        return InvalidArgs(check=args.check)
    if not ctx.workspace.self_teaching_enabled:
        return Disabled(args.scope)
    if args.target_problem is not None:
        return InvalidArgs(check=ParameterCheck(problems=[args.target_problem]))
    if (missing := _critical_state(cmd, ctx)) is not None:
        return missing
    if not js_trim(args.content):
        return InvalidArgs(blank="memory_content")
    if "\x00" in args.content:
        return InvalidArgs(nul_in="memory_content")
    target = _target(args, cmd, ctx)
    if not isinstance(target, _Target):
        return target
    content = sanitize(js_trim(target.content))
    length = utf16_length(content)
    if length == 0 or length > limits.max_memory_length:
        return InvalidContent(target.tool_scope, length, limits.max_memory_length)
    if guard_on(ctx.workspace, limits) and (credential := find_credential(content)) is not None:
        return CreateSecretRefused(target.tool_scope, credential)
    if cmd.persona.lineage_id == GLOBAL_LINEAGE:
        return ReservedLineage(target.tool_scope)
    user = None
    if target.found is not None:
        refused = _personal_refusal(args.target or "", target.found, ctx)
        if not isinstance(refused, KnownUser):
            return refused
        user = refused
    return _plan(cmd, ctx, limits, settings, target, user, content)
