"""The `memory.update` decision (docs/design.md, section 8.4), with no I/O: TomoriBot's
update_long_term_memory (src/tools/functionCalls/updateLongTermMemoryTool.ts@b0937881), its
checks in its order, up to the lock.

`decide_update` ends in an `UpdateDecision` (worker/kinds/update/record.py): a refusal, or
the `UpdatePlan` of an edit or a delete, which the service settles under the owner lock
(privacy and a proxy's hosts for an edit, then the memory's existence: `settle_update`). The
caller reads the arguments once (`read_update_args`), reads the context of their target (the
create's context read for `lookup_ids(cmd, args.target)`, worker/kinds/create/service.py) and
passes both here. The target resolves as the create's does (worker/domain/targets.py); like
TomoriBot's update, neither knows "self": only an id equal to `cmd.bot_user_id` is the bot.

Beyond TomoriBot, deliberately:
- A target's membership of the guild is read off the command (`member_matches`): the worker
  cannot fetch a member, so the bot sends the members the target may be (contracts/kinds/update.py,
  UpdateMemory).
- A proxy identity is recognised by its id's shape or by the participant's kind proxy, and an
  edit of one whose hosts cannot be found is refused (fail closed), as a create's is.
"""

from __future__ import annotations

from contracts.kinds.update import UpdateMemory
from worker.domain.content import js_trim, sanitize, utf16_length
from worker.domain.context import CreateContext
from worker.domain.notice import NoticeSettings, route_notice
from worker.domain.proxy import is_proxy_identity_id
from worker.domain.scope import Scope
from worker.domain.secret_guard import find_credential, guard_on
from worker.domain.targets import AmbiguousTarget, Resolved, resolve_target
from worker.domain.tool_arguments import ParameterCheck
from worker.domain.workspace import Limits
from worker.kinds.update.arguments import UpdateArguments
from worker.kinds.update.record import (
    BotTarget,
    BridgeTarget,
    Disabled,
    InvalidArgument,
    InvalidContent,
    InvalidParameters,
    MissingServerContext,
    NotMember,
    UpdateDecision,
    UpdatePlan,
    UpdateSecretRefused,
    UpdateTargetAmbiguous,
    UserNotFound,
)

__all__ = ["decide_update"]


def _value_refusal(args: UpdateArguments) -> UpdateDecision | None:
    """The checks of the values after self-teaching, in TomoriBot's order."""
    if args.target_problem is not None:  # TomoriBot's `.trim()` of it throws before anything else
        return InvalidParameters(ParameterCheck(problems=[args.target_problem]))
    if args.memory_id is None:
        return InvalidArgument("memory_id")
    if args.content is None:  # validateParameters already refused a non-string: kept as TomoriBot keeps it
        return InvalidArgument("memory_content")
    if args.nul_in is not None:
        return InvalidArgument("nul", parameter=args.nul_in)
    return None


def decide_update(cmd: UpdateMemory, args: UpdateArguments, ctx: CreateContext, limits: Limits,
                  settings: NoticeSettings) -> UpdateDecision:
    """TomoriBot's checks in order; the first one that fails is the answer."""
    if not args.check.ok:
        return InvalidParameters(args.check)
    if not ctx.workspace.self_teaching_enabled:
        return Disabled()
    refused = _value_refusal(args)
    if refused is not None:
        return refused
    assert args.memory_id is not None and args.content is not None  # _value_refusal refused either missing
    content: str | None = sanitize(js_trim(args.content)) or None  # blank after cleaning: delete
    if content is not None:
        length = utf16_length(content)
        if length > limits.max_memory_length:
            return InvalidContent(length, limits.max_memory_length)
        # The worker's one deliberate difference from TomoriBot (docs/design.md, section 4.2), in
        # the create's place: after the length, before the target. A delete holds nothing to guard.
        if guard_on(ctx.workspace, limits) and (kind := find_credential(content)) is not None:
            return UpdateSecretRefused(kind)
    found: Resolved | None = None
    if args.target is not None:
        resolution = resolve_target(args.target, cmd, ctx)
        if isinstance(resolution, AmbiguousTarget):
            return UpdateTargetAmbiguous(args.target, list(resolution.candidates))
        if not isinstance(resolution, Resolved):
            return UserNotFound(args.target)
        if resolution.kind == "matrix":
            return BridgeTarget()
        found = resolution
    if cmd.persona.id == 0:
        return MissingServerContext()
    if found is None:
        return _plan(cmd, args.memory_id, content, ctx, settings, scope="server", owner_id=cmd.workspace_id)
    if found.id == cmd.bot_user_id:
        return BotTarget()
    user = ctx.users.get(found.id)
    if user is None:
        return UserNotFound(args.target or found.id, label=found.label)
    proxy = found.kind == "proxy" or is_proxy_identity_id(found.id)
    if cmd.channel.is_dm:
        if cmd.triggerer is None or cmd.triggerer.id != found.id:
            return NotMember(dm=True)
    elif not proxy and not any(member.id == found.id for member in cmd.member_matches):
        return NotMember(dm=False)
    return _plan(cmd, args.memory_id, content, ctx, settings, scope="personal", owner_id=found.id,
                 user_id=user.user_id, label=found.label, proxy=proxy)


def _plan(cmd: UpdateMemory, memory_id: int, content: str | None, ctx: CreateContext, settings: NoticeSettings, *,
          scope: Scope, owner_id: str, user_id: int | None = None, label: str | None = None,
          proxy: bool = False) -> UpdatePlan:
    return UpdatePlan(
        scope=scope, owner_id=owner_id, user_id=user_id, memory_id=memory_id, content=content,
        lineage_id=cmd.persona.lineage_id, persona_name=cmd.persona.name, target_label=label,
        in_guild=not cmd.channel.is_dm, personal_memories_enabled=ctx.workspace.personal_memories_enabled,
        proxy=proxy, notice=route_notice(settings, cmd.channel))
