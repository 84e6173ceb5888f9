"""A create's result, rendered from what its inbox row stores: the one place it is built.

The reply, every repeat, the result lookup's answer and the give-up path's answer of a create
all come from `render_create(command_id, decision, settled)`: the decision the pure domain made
(worker/kinds/create/decision.py) and, for a save, what the save learned under the owner lock
(`SaveSettled`: how it ended, the new id, the count, the forgotten row). The texts are
worker/kinds/create/texts.py's; the notice is planned from the decision's route
(worker/domain/notice.py).
"""

from __future__ import annotations

from typing import assert_never

from contracts.kinds.create import CommandResult
from worker.domain import tool_texts
from worker.domain.notice import NoticePlan, NoticeSubject, plan_notice, scope_label
from worker.domain.owner import cache_key
from worker.kinds.create import texts
from worker.kinds.create.outcome import SaveOutcome
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
    SaveSettled,
    UserNotFound,
)

__all__ = ["render_create", "save_notice"]


def render_create(command_id: str, decision: CreateDecision, settled: SaveSettled | None) -> CommandResult:
    """The result of a create that ended in `decision` (and, for a save, `settled`)."""
    match decision:
        case InvalidArgs():
            return _invalid_args(command_id, decision)
        case Disabled(_, personal):
            return texts.personal_memories_disabled(command_id) if personal else texts.disabled(command_id)
        case MissingState():
            return texts.missing_state(command_id)
        case ReservedLineage():
            return texts.reserved_lineage(command_id)
        case CreateTargetAmbiguous(query, candidates):
            return texts.ambiguous(command_id, query, candidates)
        case UserNotFound(query, label):
            return texts.user_not_found(command_id, query, label=label)
        case HostProtected(label, why):
            return texts.host_protected(command_id, label, why)
        case InvalidContent(_, length, limit):
            return texts.invalid_content(command_id, length, limit)
        case PrivacyRestricted(label, _):
            return texts.privacy_restricted(command_id, label)
        case CreateSecretRefused(tool_scope, kind):
            return texts.secret_refused(command_id, tool_scope, kind)
        case SavePlan():
            if settled is None:
                raise ValueError(f"the save of {command_id!r} was stored without what it learned under the lock")
            return _saved_or_refused(command_id, decision, settled)
        case _:
            assert_never(decision)


def _invalid_args(command_id: str, decision: InvalidArgs) -> CommandResult:
    if decision.check is not None:
        return texts.invalid_args(command_id, decision.check)
    if decision.blank == "memory_content":
        return texts.blank_content(command_id)
    if decision.blank == "target_user":
        return texts.target_required(command_id)
    if decision.nul_in is not None:
        return texts.nul_character(command_id, decision.nul_in)
    return texts.legacy_invalid_args(command_id, decision.detail)


def _saved_or_refused(command_id: str, plan: SavePlan, settled: SaveSettled) -> CommandResult:
    label = plan.target_label or plan.owner_id
    match settled.outcome:
        case SaveOutcome.SAVED | SaveOutcome.SAVED_WITH_EVICTION:
            if settled.memory_id is None:
                raise ValueError(f"the save of {command_id!r} was stored without its memory id")
            return texts.saved(command_id, plan, settled.memory_id, settled.forgotten,
                                  cache_key(plan.scope, plan.owner_id), save_notice(plan, settled))
        case SaveOutcome.AT_CAP | SaveOutcome.OVER_CAP:
            if settled.count is None:
                raise ValueError(f"{settled.outcome} was stored for {command_id!r} without the count read under the lock")
            return texts.limit_exceeded(command_id, plan, settled.count)
        case SaveOutcome.PRIVACY_PARTIAL | SaveOutcome.PRIVACY_FULL:
            return texts.privacy_restricted(command_id, label)
        case SaveOutcome.HOST_PROTECTED:
            return texts.host_protected(command_id, label, "changed_while_saving")
        case _:
            assert_never(settled.outcome)


def save_notice(plan: SavePlan, settled: SaveSettled) -> NoticePlan:
    """The notice of a save that wrote: what the result and the memory.saved event carry."""
    if settled.memory_id is None:
        raise ValueError("a save's notice needs the new memory's id")
    label = plan.target_label or plan.owner_id
    evicted = settled.outcome == SaveOutcome.SAVED_WITH_EVICTION
    personal = plan.scope == "personal"
    footer = tool_texts.footer_key(plan.scope, personalization_enabled=plan.personalization_enabled,
                                   blacklisted=plan.target_blacklisted)
    embed = tool_texts.memory_embed(
        "learned", plan.scope, persona_nickname=plan.persona_name, user_nickname=label if personal else None,
        content=plan.content, footer_key=footer,
        ref={"kind": "personal_memory" if personal else "server_memory", "id": settled.memory_id})
    return plan_notice(plan.notice, NoticeSubject(
        kind="saved_with_eviction" if evicted else "saved", scope_label=scope_label(plan.scope, label),
        content_saved=plan.content, content_forgotten=(settled.forgotten or "") if evicted else None,
        persona_name=plan.persona_name), embed)
