"""Every text of a `memory.update` result: TomoriBot's own, byte for byte.

From Bredrumb/TomoriBot src/tools/functionCalls/updateLongTermMemoryTool.ts@b0937881 (and
src/types/tool/interfaces.ts@034f1928 for the parameter texts);
tests/unit/test_tomoribot_update_parity.py holds each to it. Where TomoriBot has no case (the
worker's fail-closed refusals, a give-up), the worker words it in TomoriBot's style; each such
text says so beside it. An `(error, reason)` pair: the result's `error` and its `data.reason`,
which TomoriBot words apart in some cases.
"""

from __future__ import annotations

from worker.domain import tool_texts
from worker.domain.proxy import HostProtection
from worker.domain.tool_arguments import ParameterCheck

__all__ = [
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
    "ambiguous",
    "content_too_long",
    "host_protected",
    "invalid_parameters",
    "nul_character",
    "privacy_restricted",
    "unknown_user",
    "user_not_found",
]

Texts = tuple[str, str]  # (error, data.reason)


def _both(text: str) -> Texts:
    return text, text


# What both tools say alike is worker/domain/tool_texts.py's; these pair it up as (error, reason).
def invalid_parameters(check: ParameterCheck) -> Texts:
    return _both(tool_texts.invalid_parameters(check))


def nul_character(name: str) -> Texts:
    return _both(tool_texts.nul_character_error(name))


DISABLED: Texts = (tool_texts.SELF_TEACHING_DISABLED_ERROR, tool_texts.SELF_TEACHING_DISABLED_REASON)


def ambiguous(requested: str, candidates: list[str]) -> Texts:
    return tool_texts.ambiguous_error(requested, candidates), tool_texts.AMBIGUOUS_REASON


def user_not_found(requested: str) -> Texts:
    return tool_texts.not_found_error(requested), tool_texts.NOT_FOUND_REASON


def content_too_long(limit: int) -> Texts:
    return tool_texts.content_too_long_error(limit), tool_texts.content_too_long_reason(limit)


INVALID_MEMORY_ID: Texts = _both("The 'memory_id' argument was missing or invalid.")
INVALID_CONTENT_ARG: Texts = _both("The 'memory_content' argument was missing or not a string.")
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
    """The update's own reason (the create's is longer)."""
    return (tool_texts.privacy_restricted_error(label, "update"),
            f"The user {label} has chosen to restrict personal memory storage.")


def host_protected(label: str, why: HostProtection) -> Texts:
    """A proxy identity's host protects it: host_blacklisted, host_full_privacy or (the worker's
    own, failing closed where TomoriBot does not protect) no_host."""
    return tool_texts.privacy_restricted_error(label, "update"), tool_texts.host_protection_reason(label, why, "update")


PERSONAL_NOT_FOUND: Texts = _both("Personal memory ID not found")
# The answer of a command the worker gave up on: TomoriBot's answer to a throw inside its try.
GAVE_UP: Texts = _both("Error occurred while updating memory")

UPDATED_MESSAGE = {"server": "Server memory updated successfully", "personal": "Personal memory updated successfully"}
DELETED_MESSAGE = {"server": "Server memory deleted successfully", "personal": "Personal memory deleted successfully"}
