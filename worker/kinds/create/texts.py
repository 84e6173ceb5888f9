"""Every text of a `memory.create` result (docs/design.md, section 3.4): TomoriBot's own.

Each `error` and `data.reason` is what TomoriBot's create_long_term_memory returns for that
case, byte for byte (src/tools/functionCalls/memoryTool.ts, Bredrumb/TomoriBot@60e529b0; the
texts it shares with the update tool are worker/domain/tool_texts.py's). The two differ where
TomoriBot's differ. Cases TomoriBot does not have (an unreadable command, a proxy identity
with no host, a NUL character, a host's protection changing while saving) are worded in its
style. Result keys follow TomoriBot too: `scope` is always present (null where TomoriBot has
none), `target_user` is set on a personal save and limit refusal and, as before issue 37, on
the refusals about a target; `candidates`, `current_count` and `max_allowed` where TomoriBot
sets them. worker/kinds/create/rendering.py picks the function for a stored decision; these
only word it. tests/unit/test_tomoribot_create_parity.py holds each text to TomoriBot's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from msgspec import UNSET

from contracts.kinds import create as create_codes
from contracts.kinds.create import (
    AMBIGUOUS_USER,
    DISABLED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    INVALID_CONTENT,
    LIMIT_EXCEEDED,
    PRIVACY_RESTRICTED,
    SAVED,
    SAVED_WITH_EVICTION,
    USER_NOT_FOUND,
    CommandResult,
    CreateStatus,
    ResultData,
)
from contracts.notice import NoticePlan
from contracts.result_parts import COMMAND_INVALID, CacheKey
from worker.domain import tool_texts
from worker.domain.scope import ToolScope
from worker.domain.secret_guard import CredentialKind, refusal_text
from worker.domain.tool_arguments import ParameterCheck
from worker.kinds.create.record import HostProtection, SavePlan

__all__ = [
    "SAVED_MESSAGE",
    "ambiguous",
    "blank_content",
    "db_error",
    "disabled",
    "host_protected",
    "invalid_args",
    "invalid_command",
    "invalid_content",
    "legacy_invalid_args",
    "limit_exceeded",
    "missing_state",
    "nul_character",
    "personal_memories_disabled",
    "privacy_restricted",
    "refusal",
    "reserved_lineage",
    "saved",
    "secret_refused",
    "target_required",
    "user_not_found",
]

SAVED_MESSAGE: Final = "Memory saved successfully"
MISSING_STATE: Final = "Internal bot error: Critical state information is missing"
BLANK_CONTENT: Final = "The 'memory_content' argument was missing, empty, or not a string"
TARGET_REQUIRED: Final = "The 'target_user' argument is required when 'memory_scope' is 'target_user'."
RESERVED_LINEAGE_ERROR: Final = "Internal configuration error: this persona has an invalid lineage ID."
RESERVED_LINEAGE_REASON: Final = ("Persona lineage ID is 0, which is reserved for global memories. Schema migration"
                                  " may not have run.")
USER_UNKNOWN_REASON: Final = "I can only save personal memories for users I already know."
DB_ERROR: Final = "Database error occurred while saving memory"
DB_ERROR_REASON: Final = "Database error occurred"


def refusal(command_id: str, status: CreateStatus, error: str, reason: str | None = None,
            **extra: Any) -> CommandResult:
    """A failed result: `error`, and `reason` (the same text unless given); `extra` are
    further `ResultData` fields (scope, candidates, ...)."""
    return CommandResult(
        command_id=command_id,
        success=False,
        error=error,
        data=ResultData(status=status, reason=error if reason is None else reason, **extra),
    )


def invalid_command(command_id: str, reason: str) -> CommandResult:
    """Worker-only: the command itself could not be read (a bot bug, never the model's)."""
    return refusal(command_id, COMMAND_INVALID, f"Internal bot error: the memory command could not be read ({reason})")


def invalid_args(command_id: str, check: ParameterCheck) -> CommandResult:
    return refusal(command_id, INVALID_ARGS, tool_texts.invalid_parameters(check))


def blank_content(command_id: str) -> CommandResult:
    return refusal(command_id, INVALID_ARGS, BLANK_CONTENT)


def target_required(command_id: str) -> CommandResult:
    return refusal(command_id, INVALID_ARGS, TARGET_REQUIRED, scope="target_user")


def nul_character(command_id: str, parameter: str) -> CommandResult:
    """Worker-only: PostgreSQL cannot store a NUL character (TomoriBot fails at the insert)."""
    return refusal(command_id, INVALID_ARGS, tool_texts.nul_character_error(parameter))


def legacy_invalid_args(command_id: str, detail: str) -> CommandResult:
    """A refusal stored before issue 37, which kept only the worker's own description."""
    return refusal(command_id, INVALID_ARGS, f"Invalid parameters: {detail}")


def disabled(command_id: str) -> CommandResult:
    return refusal(command_id, DISABLED, tool_texts.SELF_TEACHING_DISABLED_ERROR,
                   tool_texts.SELF_TEACHING_DISABLED_REASON)


def personal_memories_disabled(command_id: str) -> CommandResult:
    """A refusal stored before issue 37 (personal memories off then refused; now they save)."""
    return refusal(command_id, DISABLED, "Personal memories are disabled for this server",
                   "Personal memory functionality is disabled for this server", scope="target_user")


def missing_state(command_id: str) -> CommandResult:
    return refusal(command_id, INTERNAL_ERROR, MISSING_STATE)


def reserved_lineage(command_id: str) -> CommandResult:
    return refusal(command_id, INTERNAL_ERROR, RESERVED_LINEAGE_ERROR, RESERVED_LINEAGE_REASON)


def ambiguous(command_id: str, requested: str, candidates: Sequence[str]) -> CommandResult:
    shown = list(candidates[:3])
    return refusal(command_id, AMBIGUOUS_USER, tool_texts.ambiguous_error(requested, shown),
                   tool_texts.AMBIGUOUS_REASON, scope="target_user", candidates=shown, target_user=requested)


def user_not_found(command_id: str, requested: str, *, label: str | None = None) -> CommandResult:
    """Nobody matched `requested`, or (with `label`) the person matched but has no users row."""
    if label is None:
        return refusal(command_id, USER_NOT_FOUND, tool_texts.not_found_error(requested),
                       tool_texts.NOT_FOUND_REASON, scope="target_user", target_user=requested)
    return refusal(command_id, USER_NOT_FOUND,
                   f"I don't know {label} yet, so I cannot save a personal memory for them.",
                   USER_UNKNOWN_REASON, scope="target_user", target_user=label)


def invalid_content(command_id: str, length: int, limit: int) -> CommandResult:
    if length == 0:
        return refusal(command_id, INVALID_CONTENT, tool_texts.CONTENT_EMPTY)
    return refusal(command_id, INVALID_CONTENT, tool_texts.content_too_long_error(limit),
                   tool_texts.content_too_long_reason(limit))


def secret_refused(command_id: str, tool_scope: ToolScope, kind: CredentialKind) -> CommandResult:
    """Worker-only (docs/design.md, section 4.2): the content holds a credential, named by its
    kind, never repeated; the scope the memory would have had, so the model knows which one."""
    return refusal(command_id, INVALID_CONTENT, refusal_text(kind, "create_long_term_memory"), scope=tool_scope)


def privacy_restricted(command_id: str, label: str) -> CommandResult:
    reason = (f"The user {label} has chosen to restrict personal memory storage. I cannot save personal memories"
              " about them unless they change their privacy settings using '/personal config'.")
    return refusal(command_id, PRIVACY_RESTRICTED, tool_texts.privacy_restricted_error(label, "save"),
                   reason, scope="target_user", target_user=label)


def host_protected(command_id: str, label: str, why: HostProtection) -> CommandResult:
    """A proxy identity whose host protects it (docs/design.md, section 4); `why` says how."""
    if why == "changed_while_saving":
        reason = (f"The host account for {label} changed its privacy or blacklist status while I was saving. I cannot"
                  " save personal memories for its message-proxy identities.")
    else:
        reason = tool_texts.host_protection_reason(label, why, "save")
    return refusal(command_id, PRIVACY_RESTRICTED, tool_texts.privacy_restricted_error(label, "save"),
                   reason, scope="target_user", target_user=label)


def limit_exceeded(command_id: str, plan: SavePlan, current_count: int) -> CommandResult:
    """At the cap (or over it, when it was lowered) and nothing replaced: TomoriBot's refusal,
    whose `count >= max` covers both."""
    cap = plan.cap
    if plan.scope == "personal":
        return refusal(
            command_id, LIMIT_EXCEEDED,
            f"Personal memory limit reached. Users can have up to {cap} personal memories (currently: {current_count}).",
            f"Personal memory limit of {cap} memories has been reached for this user. Please inform the user that they"
            " need to use '/personal memories' to remove some of their memories before I can learn new ones about them.",
            scope=plan.tool_scope, target_user=plan.target_label or plan.owner_id, current_count=current_count,
            max_allowed=cap)
    return refusal(
        command_id, LIMIT_EXCEEDED,
        f"Server memory limit reached. This server can have up to {cap} memories (currently: {current_count}).",
        f"Server memory limit of {cap} memories has been reached. Please inform the user that they need to use"
        " '/memories' to remove some memories before I can learn new ones.",
        scope=plan.tool_scope, current_count=current_count, max_allowed=cap)


def db_error(command_id: str) -> CommandResult:
    """The worker gave up on the command after its retries (TomoriBot: a thrown database error)."""
    return refusal(command_id, create_codes.DB_ERROR, DB_ERROR, DB_ERROR_REASON)


def saved(command_id: str, plan: SavePlan, memory_id: int, forgotten: str | None, invalidated: CacheKey,
          notice: NoticePlan) -> CommandResult:
    """The success result; `forgotten` is the content of the row an eviction replaced."""
    data = ResultData(
        status=SAVED if forgotten is None else SAVED_WITH_EVICTION,
        scope=plan.tool_scope,
        memory_id=memory_id,
        content_saved=plan.content,
        content_forgotten=forgotten,
        target_user=(plan.target_label or plan.owner_id) if plan.scope == "personal" else UNSET,
    )
    return CommandResult(command_id=command_id, success=True, message=SAVED_MESSAGE, data=data,
                         invalidated=[invalidated], notice=dict(notice))
