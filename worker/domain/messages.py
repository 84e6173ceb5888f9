"""Every text of a `memory.create` result (docs/design.md, section 3.4), worded for the model to relay.

A failure says what happened and what the user can do about it; the same text goes to
`error` and `data.reason` because models read either. worker/domain/create_result.py picks
the function for a stored decision; these only word it.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from contracts import results as codes
from contracts.notice import NoticePlan
from contracts.results import CacheKey, CommandResult, CreateStatus, ResultData
from worker.domain.create_decision import HostProtection, SavePlan
from worker.domain.model import EvictionBlocker, LimitReason, Privacy, Scope, ToolScope
from worker.domain.proxy import WORDS
from worker.domain.secret_guard import CredentialKind, refusal_text

__all__ = [
    "SAVED_MESSAGE",
    "ambiguous",
    "db_error",
    "disabled",
    "host_protected",
    "internal_error",
    "invalid_args",
    "invalid_command",
    "invalid_content",
    "limit_exceeded",
    "privacy_restricted",
    "refusal",
    "reserved_lineage",
    "saved",
    "secret_refused",
    "user_not_found",
]

SAVED_MESSAGE = "Memory saved successfully"
_SERVER_PANEL = "/memories"
_PERSONAL_PANEL = "/personal memories"
_PRIVACY_PANEL = "/personal config"
_PRIVACY_NAMES: dict[int, str] = {Privacy.PARTIAL: "partial", Privacy.FULL: "full"}


def refusal(command_id: str, status: CreateStatus, reason: str, **extra: Any) -> CommandResult:
    """A failed result; `extra` are further `ResultData` fields (scope, candidates, ...)."""
    return CommandResult(
        command_id=command_id,
        success=False,
        error=reason,
        data=ResultData(status=status, reason=reason, **extra),
    )


def invalid_command(command_id: str, reason: str) -> CommandResult:
    text = (
        f"The memory command could not be read ({reason}), so nothing was saved. "
        "This is a problem between the bot and its memory service, not something the user did; "
        "trying again later may help."
    )
    return refusal(command_id, codes.COMMAND_INVALID, text)


def invalid_args(command_id: str, detail: str) -> CommandResult:
    text = (
        f"Invalid arguments for create_long_term_memory: {detail}. Nothing was saved; "
        "call the tool again with corrected arguments."
    )
    return refusal(command_id, codes.INVALID_ARGS, text)


def disabled(command_id: str, tool_scope: ToolScope, *, personal: bool = False) -> CommandResult:
    if personal:
        text = (
            "Personal memories are turned off on this server, so I can't save memories about "
            "individual users here. Nothing was saved. A server manager can turn personal memories "
            "back on in the bot's settings."
        )
    else:
        text = (
            "Self-teaching is turned off on this server, so I can't save memories on my own here. "
            "Nothing was saved. A server manager can turn it back on in the bot's settings; "
            f"memories can still be added by hand with {_SERVER_PANEL}."
        )
    return refusal(command_id, codes.DISABLED, text, scope=tool_scope)


def reserved_lineage(command_id: str, tool_scope: ToolScope) -> CommandResult:
    return internal_error(command_id, tool_scope,
                          "the active persona has lineage 0, which is reserved for global memories")


def internal_error(command_id: str, tool_scope: ToolScope | None, detail: str) -> CommandResult:
    text = (
        f"An internal error kept me from saving this memory ({detail}). Nothing was saved. "
        "This is a bot setup problem, not something the user did; the bot's operator needs to fix it."
    )
    return refusal(command_id, codes.INTERNAL_ERROR, text, scope=tool_scope)


def ambiguous(command_id: str, query: str, candidates: list[str] | tuple[str, ...]) -> CommandResult:
    shown = list(candidates[:3])
    text = (
        f'More than one person matches "{query}": {", ".join(shown)}. Nothing was saved; '
        "ask the user which one they mean, or call the tool again with target_user set to the "
        "exact name of that person."
    )
    return refusal(
        command_id, codes.AMBIGUOUS_USER, text, scope="target_user", candidates=shown, target_user=query
    )


def user_not_found(command_id: str, query: str, *, label: str | None = None) -> CommandResult:
    """Nobody matched `query`, or (with `label`) the person matched but has no user record yet."""
    if label is None:
        text = (
            f'I couldn\'t find anyone called "{query}" in this conversation or server, so nothing '
            "was saved. Use the person's name exactly as it appears in the conversation and try again."
        )
    else:
        text = (
            f"I can only save personal memories for users I already know, and I don't know {label} "
            "yet (they have no profile with me), so nothing was saved. Once they have talked with me, "
            "try again."
        )
    return refusal(command_id, codes.USER_NOT_FOUND, text, scope="target_user", target_user=label or query)


def invalid_content(command_id: str, tool_scope: ToolScope, length: int, limit: int) -> CommandResult:
    if length == 0:
        text = (
            "The memory content is empty, so nothing was saved. "
            "Call the tool again with the fact to remember."
        )
    else:
        text = (
            f"The memory is too long: {length} characters, and the limit is {limit}. Nothing was saved; "
            "shorten it (keep the essential fact) and try again."
        )
    return refusal(command_id, codes.INVALID_CONTENT, text, scope=tool_scope)


def secret_refused(command_id: str, tool_scope: ToolScope, kind: CredentialKind) -> CommandResult:
    """The content holds a credential: named by its kind, never repeated (worker/domain/secret_guard.py)."""
    return refusal(command_id, codes.INVALID_CONTENT, refusal_text(kind, "create_long_term_memory"), scope=tool_scope)


def privacy_restricted(command_id: str, label: str, privacy_level: int) -> CommandResult:
    # A level the schema does not know reads as full, as under the lock (memory_create_batch).
    setting = _PRIVACY_NAMES.get(privacy_level, "full")
    text = (
        f"{label} has limited what I may remember about them (privacy setting: {setting}), so no "
        f"personal memory was saved. Only they can change this, with {_PRIVACY_PANEL}."
    )
    return refusal(command_id, codes.PRIVACY_RESTRICTED, text, scope="target_user", target_user=label)


_CHANGED_WHILE_SAVING = "a host's protection changed while saving"


def host_protected(command_id: str, label: str, why: HostProtection) -> CommandResult:
    """A proxy identity whose host protects it (docs/design.md, section 4 step 7); `why` says how."""
    because = _CHANGED_WHILE_SAVING if why == "changed_while_saving" else WORDS[why]
    text = (
        f"{label} is written through a message proxy, and I can't save personal memories about "
        f"them: {because}. Nothing was saved."
    )
    return refusal(command_id, codes.PRIVACY_RESTRICTED, text, scope="target_user", target_user=label)


def _owner_phrase(plan: SavePlan) -> str:
    if plan.scope == "personal":
        return f"{plan.target_label or 'This user'} has"
    return "This server has"


def _manage_hint(scope: Scope) -> str:
    if scope == "personal":
        return f"they can remove some of their memories with {_PERSONAL_PANEL} to make room"
    return f"someone can remove some server memories with {_SERVER_PANEL} to make room"


_BLOCKERS: dict[EvictionBlocker, str] = {
    "decay_off": "memory decay is turned off for this server",
    "retrieval_unavailable": "memory retrieval is not available",
    "no_embedding_credentials": "no embedding credentials are configured",
    "no_embedding_model": "no embedding model is configured",
}


def _limit_text(plan: SavePlan, reason: LimitReason) -> str:
    kind = "personal memories" if plan.scope == "personal" else "memories"
    manage = _manage_hint(plan.scope)
    if reason == "over_cap":
        return (
            f"{_owner_phrase(plan)} more {kind} than the current limit of {plan.cap} (the limit was "
            f"lowered), so I can't add or replace any. Nothing was saved; {manage}."
        )
    head = f"{_owner_phrase(plan)} reached the limit of {plan.cap} {kind}"
    if reason == "eviction_not_permitted":
        because = "; ".join(_BLOCKERS[b] for b in plan.blocked_by) or "memory decay is not available"
        return (
            f"{head}, and old memories are not replaced automatically here because {because}. "
            f"Nothing was saved; {manage}."
        )
    return (
        f"{head}, and none of them can be forgotten to make room: each one was either written by "
        f"hand (those are protected) or used in the last {plan.decay_days} days. "
        f"Nothing was saved; {manage}."
    )


def limit_exceeded(
    command_id: str,
    plan: SavePlan,
    current_count: int,
    reason: LimitReason,
) -> CommandResult:
    return refusal(
        command_id,
        codes.LIMIT_EXCEEDED,
        _limit_text(plan, reason),
        scope=plan.tool_scope,
        current_count=current_count,
        max_allowed=plan.cap,
    )


def db_error(command_id: str, tool_scope: ToolScope | None = None) -> CommandResult:
    text = (
        "A database error kept the memory from being saved; nothing was changed. "
        "It is safe to try again in a moment."
    )
    return refusal(command_id, codes.DB_ERROR, text, scope=tool_scope)


def saved(command_id: str, plan: SavePlan, memory_id: int, forgotten: str | None, invalidated: CacheKey,
          notice: NoticePlan) -> CommandResult:
    """The success result; `forgotten` is the content of the row an eviction replaced."""
    data = ResultData(
        status=codes.SAVED if forgotten is None else codes.SAVED_WITH_EVICTION,
        scope=plan.tool_scope,
        memory_id=memory_id,
        content_saved=plan.content,
        content_forgotten=forgotten,
        target_user=plan.target_label if plan.target_label is not None else UNSET,
    )
    return CommandResult(command_id=command_id, success=True, message=SAVED_MESSAGE, data=data,
                         invalidated=[invalidated], notice=dict(notice))
