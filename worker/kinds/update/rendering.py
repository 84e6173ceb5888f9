"""A memory.update's result, rendered from what its inbox row stores: the one place it is built.

The reply, every repeat, the result lookup's answer and the give-up path's answer of an update
all come from `render_update(command_id, decision, settled)`: the decision the pure domain made
(worker/kinds/update/decision.py) and, for a plan, what it learned under the owner lock. The texts are
TomoriBot's (worker/kinds/update/texts.py); the notice is planned from the plan's route
(worker/kinds/update/notice.py).
"""

from __future__ import annotations

from typing import Any, assert_never

from msgspec import UNSET

from contracts.kinds.update import (
    MEMORY_DELETED,
    MEMORY_UPDATED,
    UPDATE_AMBIGUOUS_USER,
    UPDATE_DISABLED,
    UPDATE_ERROR,
    UPDATE_INTERNAL_ERROR,
    UPDATE_INVALID_ARGS,
    UPDATE_INVALID_CONTENT,
    UPDATE_INVALID_SCOPE,
    UPDATE_INVALID_TARGET,
    UPDATE_NOT_FOUND,
    UPDATE_PRIVACY_RESTRICTED,
    UPDATE_USER_NOT_FOUND,
    UpdateData,
    UpdateResult,
    UpdateStatus,
)
from worker.domain.owner import cache_key
from worker.domain.secret_guard import refusal_text
from worker.kinds.update import texts
from worker.kinds.update.notice import update_notice
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
    UpdateOutcome,
    UpdatePlan,
    UpdateSecretRefused,
    UpdateSettled,
    UpdateTargetAmbiguous,
    UserNotFound,
)

__all__ = ["gave_up", "render_update"]


def _refused(command_id: str, status: UpdateStatus, said: texts.Texts, **extra: Any) -> UpdateResult:
    error, reason = said
    return UpdateResult(command_id=command_id, success=False, error=error,
                        data=UpdateData(status=status, reason=reason, **extra))


def gave_up(command_id: str) -> UpdateResult:
    """The answer of an update the worker gave up on before it was stored."""
    return _refused(command_id, UPDATE_ERROR, texts.GAVE_UP)


def _invalid_argument(decision: InvalidArgument) -> texts.Texts:
    match decision.problem:
        case "memory_id":
            return texts.INVALID_MEMORY_ID
        case "memory_content":
            return texts.INVALID_CONTENT_ARG
        case "nul":
            return texts.nul_character(decision.parameter)
        case _:
            assert_never(decision.problem)


def render_update(command_id: str, decision: UpdateDecision, settled: UpdateSettled | None) -> UpdateResult:
    """The result of an update that ended in `decision` (and, for a plan, `settled`)."""
    match decision:
        case InvalidParameters(check):
            return _refused(command_id, UPDATE_INVALID_ARGS, texts.invalid_parameters(check))
        case InvalidArgument():
            return _refused(command_id, UPDATE_INVALID_ARGS, _invalid_argument(decision))
        case Disabled():
            return _refused(command_id, UPDATE_DISABLED, texts.DISABLED)
        case InvalidContent(_, limit):
            return _refused(command_id, UPDATE_INVALID_CONTENT, texts.content_too_long(limit))
        case UpdateSecretRefused(kind):
            refusal = refusal_text(kind, "update_long_term_memory")
            return _refused(command_id, UPDATE_INVALID_CONTENT, (refusal, refusal))
        case UpdateTargetAmbiguous(query, candidates):
            return _refused(command_id, UPDATE_AMBIGUOUS_USER, texts.ambiguous(query, candidates),
                            candidates=list(candidates))
        case UserNotFound(query, label):
            said = texts.user_not_found(query) if label is None else texts.unknown_user(label)
            return _refused(command_id, UPDATE_USER_NOT_FOUND, said)
        case BridgeTarget():
            return _refused(command_id, UPDATE_INVALID_SCOPE, texts.BRIDGE_TARGET)
        case MissingServerContext():
            return _refused(command_id, UPDATE_INTERNAL_ERROR, texts.MISSING_SERVER_CONTEXT)
        case BotTarget():
            return _refused(command_id, UPDATE_INVALID_TARGET, texts.BOT_TARGET)
        case NotMember(dm):
            return _refused(command_id, UPDATE_INVALID_SCOPE,
                            texts.NOT_IN_CONVERSATION if dm else texts.NOT_IN_SERVER)
        case UpdatePlan():
            if settled is None:
                raise ValueError(f"the update of {command_id!r} was stored without what it learned under the lock")
            return _settled(command_id, decision, settled)
        case _:
            assert_never(decision)


def _settled(command_id: str, plan: UpdatePlan, settled: UpdateSettled) -> UpdateResult:
    label = plan.target_label or plan.owner_id
    match settled.outcome:
        case UpdateOutcome.UPDATED | UpdateOutcome.DELETED:
            return _changed(command_id, plan, settled)
        case UpdateOutcome.NOT_FOUND:
            said = texts.SERVER_NOT_FOUND if plan.scope == "server" else texts.PERSONAL_NOT_FOUND
            return _refused(command_id, UPDATE_NOT_FOUND, said)
        case UpdateOutcome.PRIVACY_PARTIAL | UpdateOutcome.PRIVACY_FULL:
            return _refused(command_id, UPDATE_PRIVACY_RESTRICTED, texts.privacy_restricted(label))
        case UpdateOutcome.HOST_PROTECTED:
            return _refused(command_id, UPDATE_PRIVACY_RESTRICTED,
                            texts.host_protected(label, settled.host or "no_host"))
        case _:
            assert_never(settled.outcome)


def _changed(command_id: str, plan: UpdatePlan, settled: UpdateSettled) -> UpdateResult:
    deleted = settled.outcome == UpdateOutcome.DELETED
    if deleted and settled.content_before is None:
        raise ValueError(f"the delete of {command_id!r} was stored without the deleted text")
    personal = plan.scope == "personal"
    data = UpdateData(
        status=MEMORY_DELETED if deleted else MEMORY_UPDATED,
        scope="target_user" if personal else "server_wide",
        memory_id=plan.memory_id,
        content_saved=UNSET if deleted or plan.content is None else plan.content,
        content_deleted=settled.content_before if deleted and settled.content_before is not None else UNSET,
        target_user=(plan.target_label or plan.owner_id) if personal else UNSET,
    )
    message = (texts.DELETED_MESSAGE if deleted else texts.UPDATED_MESSAGE)[plan.scope]
    return UpdateResult(command_id=command_id, success=True, message=message, data=data,
                        invalidated=[cache_key(plan.scope, plan.owner_id)], notice=dict(update_notice(plan, settled)))
