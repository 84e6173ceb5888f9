"""The words both model tools share (create_long_term_memory and update_long_term_memory),
exactly as TomoriBot's tools say them, and the locale keys of their notices.

Each text is TomoriBot's byte for byte (src/tools/functionCalls/memoryTool.ts and
updateLongTermMemoryTool.ts, Bredrumb/TomoriBot@60e529b0 / @b0937881; src/types/tool/interfaces.ts
for the parameter check; src/utils/discord/targetResolver.ts for the labels); the worker's
own cases that TomoriBot lacks (a proxy identity with no host) are worded in the same style.
tests/unit/test_tomoribot_tool_texts.py holds each to TomoriBot's string. What differs between
the tools is passed in: the verb ("save" or "update") of the host-protection and privacy texts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from contracts.notice import Embed, EmbedColor, EmbedRef
from worker.domain.content import JS_WHITESPACE, js_trim
from worker.domain.proxy import HostProtection
from worker.domain.scope import Scope
from worker.domain.tool_arguments import ParameterCheck, ParameterProblem

__all__ = [
    "AMBIGUOUS_REASON",
    "CONTENT_EMPTY",
    "NOT_FOUND_REASON",
    "SELF_TEACHING_DISABLED_ERROR",
    "SELF_TEACHING_DISABLED_REASON",
    "SERVER_MEMORY_FOOTER",
    "EmbedAction",
    "ToolVerb",
    "ambiguous_error",
    "bridge_display_name",
    "content_too_long_error",
    "content_too_long_reason",
    "format_bridge_label",
    "footer_key",
    "format_discord_user_label",
    "host_protection_reason",
    "invalid_parameters",
    "memory_embed",
    "not_found_error",
    "nul_character_error",
    "parameter_problem",
    "privacy_restricted_error",
]

ToolVerb = Literal["save", "update"]

SELF_TEACHING_DISABLED_ERROR: Final = "Self-teaching is disabled for this server"
SELF_TEACHING_DISABLED_REASON: Final = "Self-teaching functionality is disabled for this server"
AMBIGUOUS_REASON: Final = "Multiple users matched the requested target."
NOT_FOUND_REASON: Final = "The requested user was not found in this conversation or server."
CONTENT_EMPTY: Final = "Memory content cannot be empty"


def parameter_problem(problem: ParameterProblem) -> str:
    if problem.actual is not None:
        return f"Parameter '{problem.parameter}' expected type '{problem.expected}' but got '{problem.actual}'"
    return f"Parameter '{problem.parameter}' must be one of: {', '.join(problem.allowed or [])}"


def invalid_parameters(check: ParameterCheck) -> str:
    """The `error` and `reason` of a failed parameter check: the problems when there are any,
    else the missing parameters."""
    if check.problems:
        return "Invalid parameters: " + ", ".join(parameter_problem(p) for p in check.problems)
    return "Invalid parameters: Missing required parameters: " + ", ".join(check.missing)


def nul_character_error(parameter: str) -> str:
    """The worker's: PostgreSQL cannot store a NUL character (TomoriBot's write would throw)."""
    return f"Invalid parameters: Parameter '{parameter}' must not contain NUL characters"


def ambiguous_error(requested: str, labels: Sequence[str]) -> str:
    """`requested` is the model's target as it gave it, trimmed; `labels` at most three."""
    return f'Multiple users match "{requested}". Please clarify which one you mean: {", ".join(labels)}.'


def not_found_error(requested: str) -> str:
    return f'Could not find a user matching "{requested}" in this conversation or server.'


def content_too_long_error(max_allowed: int) -> str:
    return f"Memory content is too long. Maximum length is {max_allowed} characters."


def content_too_long_reason(max_allowed: int) -> str:
    return f"Memory content exceeds maximum length of {max_allowed} characters"


def privacy_restricted_error(label: str, verb: ToolVerb) -> str:
    """The `error` of both the target's own privacy and its host's protection."""
    return f"Cannot {verb} personal memory: {label} has privacy restrictions."


def host_protection_reason(label: str, why: HostProtection, verb: ToolVerb) -> str:
    """The `reason` when a proxy identity's host protects it. TomoriBot has no "no_host" case
    (it saves for an identity it cannot trace to a host; the worker refuses, failing closed)."""
    if why == "host_blacklisted":
        state = "is blacklisted in this server"
    elif why == "host_full_privacy":
        state = "has full privacy enabled"
    else:
        state = "could not be found"
    return f"The host account for {label} {state}. I cannot {verb} personal memories for its message-proxy identities."


def format_discord_user_label(display_name: str | None, global_name: str | None, username: str | None) -> str:
    """TomoriBot's `formatDiscordUserLabel`: the display name (else the global name, else the
    username), followed by ` (@username)` unless the two are the same ignoring case."""
    user = js_trim(username or "")
    shown = js_trim(display_name or "") or js_trim(global_name or "") or user
    if not user or shown.lower() == user.lower():
        return shown
    return f"{shown} (@{user})"


_MATRIX_MARK = "(Matrix)"
_MATRIX_SUFFIX = re.compile(f"[{JS_WHITESPACE}]+\\(Matrix\\)\\Z")  # JavaScript's `\s`, not Python's


def format_bridge_label(label: str) -> str:
    """TomoriBot's `formatBridgeUserLabel`: a bridge user's label carries " (Matrix)"."""
    return label if _MATRIX_MARK in label else f"{label} {_MATRIX_MARK}"


def bridge_display_name(label: str) -> str:
    """The name `{user}` becomes in a bridge user's memory: the label without a trailing
    " (Matrix)" (TomoriBot: `displayLabel.replace(/\\s+\\(Matrix\\)$/u, "")`)."""
    return _MATRIX_SUFFIX.sub("", label)


# The notices' locale keys (TomoriBot's `genai.self_teach.*`) and its embed helper's colours.
_KEYS = "genai.self_teach."
SERVER_MEMORY_FOOTER: Final = _KEYS + "server_memory_footer"
_FOOTER_PERSONALIZATION_DISABLED: Final = _KEYS + "personal_memory_footer_personalization_disabled"
_FOOTER_USER_BLACKLISTED: Final = _KEYS + "personal_memory_footer_user_blacklisted"
_FOOTER_MANAGE: Final = _KEYS + "personal_memory_footer_manage"

EmbedAction = Literal["learned", "updated", "deleted"]
_COLORS: dict[EmbedAction, EmbedColor] = {"learned": "success", "updated": "memory_update", "deleted": "error"}


def footer_key(scope: Scope, *, personalization_enabled: bool, blacklisted: bool) -> str:
    """The footer of a memory's notice: a server memory's, or for a personal memory the first
    that applies: personal memories off in this workspace, the person blacklisted from
    personalization here (for the update, also a proxy identity its host protects), else
    "manage"."""
    if scope == "server":
        return SERVER_MEMORY_FOOTER
    if not personalization_enabled:
        return _FOOTER_PERSONALIZATION_DISABLED
    if blacklisted:
        return _FOOTER_USER_BLACKLISTED
    return _FOOTER_MANAGE


def memory_embed(action: EmbedAction, scope: Scope, *, persona_nickname: str, user_nickname: str | None,
                 content: str, footer_key: str, memory_id: int | None = None, ref: EmbedRef | None = None) -> Embed:
    """The embed options TomoriBot's tools pass `sendMemoryEmbedWithExpand` for `action` on a
    memory of `scope`: `user_nickname` for a personal memory, `memory_id` for an update or a
    delete (TomoriBot passes `memoryId.toString()` to the description, whose English text does
    not show it: a decimal string here too; `ref.id` stays a number)."""
    personal = scope == "personal"
    kind = "personal" if personal else "server"
    title_vars: dict[str, str] = {"persona_nickname": persona_nickname}
    description_vars: dict[str, str] = {}
    if personal:
        if user_nickname is None:
            raise ValueError("a personal memory's notice names its user")
        title_vars = {"user_nickname": user_nickname, "persona_nickname": persona_nickname}
        description_vars["user_nickname"] = user_nickname
    if action != "learned":
        if memory_id is None:
            raise ValueError(f"an {action} memory's notice names its id")
        description_vars["memory_id"] = str(memory_id)
    description_vars["memory_content"] = content
    return {
        "color": _COLORS[action],
        "title_key": f"{_KEYS}{kind}_memory_{action}_title",
        "title_vars": title_vars,
        "description_key": f"{_KEYS}{kind}_memory_{action}_description",
        "description_vars": description_vars,
        "footer_key": footer_key,
        "full_content": content,
        "ref": ref,
    }
