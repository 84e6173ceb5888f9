"""Every text of a `memory.update` result: TomoriBot's own, byte for byte.

From Bredrumb/TomoriBot src/tools/functionCalls/updateLongTermMemoryTool.ts@b0937881 (and
src/types/tool/interfaces.ts@034f1928 for the parameter texts);
tests/unit/test_tomoribot_update_parity.py holds each to it. Where TomoriBot has no case (the
worker's fail-closed refusals, a give-up), the worker words it in TomoriBot's style; each such
text says so beside it. An `(error, reason)` pair: the result's `error` and its `data.reason`,
which TomoriBot words apart in some cases.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.domain.update_arguments import ParameterProblems, TypeMismatch

__all__ = [
    "AMBIGUOUS_REASON",
    "BOT_TARGET",
    "BRIDGE_TARGET",
    "DELETED_MESSAGE",
    "DISABLED",
    "GAVE_UP",
    "INVALID_CONTENT_ARG",
    "INVALID_MEMORY_ID",
    "MISSING_SERVER_CONTEXT",
    "NOT_IN_CONVERSATION",
    "NOT_IN_SERVER",
    "PERSONAL_NOT_FOUND",
    "SERVER_NOT_FOUND",
    "UPDATED_MESSAGE",
    "USER_NOT_FOUND_REASON",
    "ambiguous",
    "content_too_long",
    "host_protected",
    "invalid_parameters",
    "nul_character",
    "privacy_restricted",
    "unknown_user",
    "user_not_found",
    "wrong_target_type",
]

Texts = tuple[str, str]  # (error, data.reason)


def _both(text: str) -> Texts:
    return text, text


# shared with create: issue-37-create's tool_texts (BaseTool.validateParameters, the target
# resolution's ambiguous and not-found texts, the self-teaching switch).
def _parameter_error(problem: TypeMismatch) -> str:
    if problem.allowed:
        return f"Parameter '{problem.name}' must be one of: {', '.join(problem.allowed)}"
    return f"Parameter '{problem.name}' expected type '{problem.expected}' but got '{problem.got}'"


def invalid_parameters(problems: ParameterProblems) -> Texts:
    """`Invalid parameters: ${errors.join(", ") || `Missing required parameters: ${missing.join(", ")}`}`"""
    errors = ", ".join(_parameter_error(p) for p in problems.errors)
    missing = ", ".join(problems.missing)
    return _both(f"Invalid parameters: {errors or f'Missing required parameters: {missing}'}")


def wrong_target_type(name: str, got: str) -> Texts:
    """The worker's: a legacy target name that is not a string (TomoriBot throws on it)."""
    return invalid_parameters(ParameterProblems(errors=(TypeMismatch(name, "string", got),)))


def nul_character(name: str) -> Texts:
    """The worker's: PostgreSQL cannot store a NUL character (TomoriBot's insert would fail)."""
    return _both(f"Invalid parameters: Parameter '{name}' must not contain NUL characters (\\u0000)")


DISABLED: Texts = ("Self-teaching is disabled for this server", "Self-teaching functionality is disabled for this server")
AMBIGUOUS_REASON = "Multiple users matched the requested target."
USER_NOT_FOUND_REASON = "The requested user was not found in this conversation or server."


def ambiguous(requested: str, candidates: Sequence[str]) -> Texts:
    return (f'Multiple users match "{requested}". Please clarify which one you mean: {", ".join(candidates)}.',
            AMBIGUOUS_REASON)


def user_not_found(requested: str) -> Texts:
    return f'Could not find a user matching "{requested}" in this conversation or server.', USER_NOT_FOUND_REASON
# shared with create: end.


INVALID_MEMORY_ID: Texts = _both("The 'memory_id' argument was missing or invalid.")
INVALID_CONTENT_ARG: Texts = _both("The 'memory_content' argument was missing or not a string.")


def content_too_long(limit: int) -> Texts:
    return (f"Memory content is too long. Maximum length is {limit} characters.",
            f"Memory content exceeds maximum length of {limit} characters")


BRIDGE_TARGET: Texts = ("Bridge users only support server-wide memories, so personal memories cannot be updated "
                        "for them.", "Bridge users do not support personal memory updates.")
MISSING_SERVER_CONTEXT: Texts = _both("Internal bot error: Missing server context")
SERVER_NOT_FOUND: Texts = _both("Memory ID not found in this server")
BOT_TARGET: Texts = ("Cannot update personal memories about the bot. Use a server memory instead.",
                     "Personal memories cannot be updated about the bot itself.")


def unknown_user(label: str) -> Texts:
    """The target resolved, but has no users row."""
    return (f"I don't know {label} yet, so this personal memory cannot be updated.",
            "I can only update personal memories for users I already know.")


NOT_IN_SERVER: Texts = _both("Personal memory owner is not in this server")
NOT_IN_CONVERSATION: Texts = _both("Personal memory owner is not in this conversation")


def privacy_restricted(label: str) -> Texts:
    return (f"Cannot update personal memory: {label} has privacy restrictions.",
            f"The user {label} has chosen to restrict personal memory storage.")


def host_protected(label: str, why: str) -> Texts:
    """A proxy identity's host protects it: `why` is host_blacklisted, host_full_privacy or (the
    worker's own, failing closed where TomoriBot does not protect) no_host."""
    if why == "host_blacklisted":
        because = f"The host account for {label} is blacklisted in this server."
    elif why == "host_full_privacy":
        because = f"The host account for {label} has full privacy enabled."
    else:
        because = f"I could not find the host account for {label}."
    return (f"Cannot update personal memory: {label} has privacy restrictions.",
            f"{because} I cannot update personal memories for its message-proxy identities.")


PERSONAL_NOT_FOUND: Texts = _both("Personal memory ID not found")
# The answer of a command the worker gave up on: TomoriBot's answer to a throw inside its try.
GAVE_UP: Texts = _both("Error occurred while updating memory")

UPDATED_MESSAGE = {"server": "Server memory updated successfully", "personal": "Personal memory updated successfully"}
DELETED_MESSAGE = {"server": "Server memory deleted successfully", "personal": "Personal memory deleted successfully"}
