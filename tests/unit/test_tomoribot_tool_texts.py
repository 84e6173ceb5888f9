"""The parameter check and the texts both model tools share, held to TomoriBot.

Expected strings are typed from TomoriBot's source (Bredrumb/TomoriBot): src/types/tool/interfaces.ts
@034f1928 (`validateParameters`), src/tools/functionCalls/memoryTool.ts @60e529b0 and
updateLongTermMemoryTool.ts @b0937881 (texts), src/utils/discord/targetResolver.ts @a950f54c
(labels), src/locales/en-US/providers.ts @0f73216c (notice keys).
"""

from __future__ import annotations

from typing import Any

import pytest

from worker.domain import tool_texts
from worker.domain.scope import Scope
from worker.domain.tool_arguments import (
    Parameter,
    ParameterCheck,
    ParameterProblem,
    ToolParameters,
    json_type,
    validate_parameters,
)

# memoryTool.ts's declaration (create_long_term_memory), and updateLongTermMemoryTool.ts's.
CREATE = ToolParameters(
    properties={"memory_content": Parameter("string"),
                "memory_scope": Parameter("string", enum=("server_wide", "target_user")),
                "target_user": Parameter("string")},
    required=("memory_content", "memory_scope"))
UPDATE = ToolParameters(
    properties={"memory_id": Parameter("number"), "memory_content": Parameter("string"),
                "target_user": Parameter("string")},
    required=("memory_id", "memory_content"))


def _text(args: Any, declared: ToolParameters = CREATE) -> str | None:
    check = validate_parameters(args, declared)
    return None if check.ok else tool_texts.invalid_parameters(check)


@pytest.mark.parametrize(("value", "named"), [
    ("x", "string"), (1, "number"), (1.5, "number"), (True, "boolean"), ([1], "array"), ({}, "object"),
    (None, "object"),
])
def test_types_are_named_as_javascript_names_them(value: Any, named: str) -> None:
    """interfaces.ts: `Array.isArray(value) ? "array" : typeof value`."""
    assert json_type(value) == named


@pytest.mark.parametrize(("args", "expected"), [
    # interfaces.ts: missing = absent or null, in `required` order.
    ({}, "Invalid parameters: Missing required parameters: memory_content, memory_scope"),
    ({"memory_scope": "server_wide"}, "Invalid parameters: Missing required parameters: memory_content"),
    ({"memory_content": None, "memory_scope": None},
     "Invalid parameters: Missing required parameters: memory_content, memory_scope"),
    # A wrong type, named the JavaScript way.
    ({"memory_content": 5, "memory_scope": "server_wide"},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'number'"),
    ({"memory_content": ["a"], "memory_scope": "server_wide"},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'array'"),
    ({"memory_content": {"a": 1}, "memory_scope": "server_wide"},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'object'"),
    ({"memory_content": False, "memory_scope": "server_wide"},
     "Invalid parameters: Parameter 'memory_content' expected type 'string' but got 'boolean'"),
    # The enum: exact, case and blanks count.
    ({"memory_content": "x", "memory_scope": "global"},
     "Invalid parameters: Parameter 'memory_scope' must be one of: server_wide, target_user"),
    ({"memory_content": "x", "memory_scope": "Server_Wide"},
     "Invalid parameters: Parameter 'memory_scope' must be one of: server_wide, target_user"),
    ({"memory_content": "x", "memory_scope": " server_wide"},
     "Invalid parameters: Parameter 'memory_scope' must be one of: server_wide, target_user"),
    # A declared target_user is checked even with server_wide.
    ({"memory_content": "x", "memory_scope": "server_wide", "target_user": 7},
     "Invalid parameters: Parameter 'target_user' expected type 'string' but got 'number'"),
    # Problems win over missing parameters, and are listed in the arguments' order.
    ({"target_user": 7, "memory_scope": 1},
     "Invalid parameters: Parameter 'target_user' expected type 'string' but got 'number', "
     "Parameter 'memory_scope' expected type 'string' but got 'number'"),
])
def test_create_parameters_as_tomoribot_checks_them(args: dict[str, Any], expected: str) -> None:
    assert _text(args) == expected


@pytest.mark.parametrize("args", [
    {"memory_content": "x", "memory_scope": "server_wide"},
    # Undeclared names (the legacy target names among them) are never checked.
    {"memory_content": "x", "memory_scope": "target_user", "target_user_discord_id": 5, "other": [1]},
    # A blank string passes the check: the tool refuses it later, in its own words.
    {"memory_content": "  ", "memory_scope": "server_wide"},
    {"memory_content": "x", "memory_scope": "server_wide", "target_user": None},
])
def test_arguments_that_pass(args: dict[str, Any]) -> None:
    assert _text(args) is None


def test_update_parameters_as_tomoribot_checks_them() -> None:
    """updateLongTermMemoryTool.ts: memory_id is a number; "ID:24" and "24" are strings."""
    assert _text({"memory_id": "ID:24", "memory_content": ""}, UPDATE) == (
        "Invalid parameters: Parameter 'memory_id' expected type 'number' but got 'string'")
    assert _text({"memory_content": "x"}, UPDATE) == "Invalid parameters: Missing required parameters: memory_id"
    assert _text({"memory_id": 24, "memory_content": ""}, UPDATE) is None


@pytest.mark.parametrize("args", [None, "memory_content: tea", [{"memory_content": "x"}], 42])
def test_arguments_that_are_not_an_object_read_as_none_given(args: Any) -> None:
    """Worker-only case (TomoriBot is always handed an object): worded as an empty one."""
    assert _text(args) == "Invalid parameters: Missing required parameters: memory_content, memory_scope"


def test_the_check_is_stored_as_facts() -> None:
    check = validate_parameters({"memory_scope": "x"}, CREATE)
    assert check == ParameterCheck(
        [ParameterProblem("memory_scope", "string", allowed=["server_wide", "target_user"])], ["memory_content"])


def test_shared_refusal_texts() -> None:
    """memoryTool.ts @60e529b0 and updateLongTermMemoryTool.ts @b0937881."""
    assert tool_texts.SELF_TEACHING_DISABLED_ERROR == "Self-teaching is disabled for this server"
    assert tool_texts.SELF_TEACHING_DISABLED_REASON == "Self-teaching functionality is disabled for this server"
    assert tool_texts.ambiguous_error("mika", ["Mika (@mika_01)", "Mika (@mika_02)"]) == (
        'Multiple users match "mika". Please clarify which one you mean: Mika (@mika_01), Mika (@mika_02).')
    assert tool_texts.AMBIGUOUS_REASON == "Multiple users matched the requested target."
    assert tool_texts.not_found_error("Zed") == 'Could not find a user matching "Zed" in this conversation or server.'
    assert tool_texts.NOT_FOUND_REASON == "The requested user was not found in this conversation or server."
    assert tool_texts.CONTENT_EMPTY == "Memory content cannot be empty"
    assert tool_texts.content_too_long_error(1000) == "Memory content is too long. Maximum length is 1000 characters."
    assert tool_texts.content_too_long_reason(1000) == "Memory content exceeds maximum length of 1000 characters"
    assert tool_texts.privacy_restricted_error("Mika", "save") == (
        "Cannot save personal memory: Mika has privacy restrictions.")
    assert tool_texts.privacy_restricted_error("Mika", "update") == (
        "Cannot update personal memory: Mika has privacy restrictions.")


@pytest.mark.parametrize(("why", "verb", "expected"), [
    ("host_blacklisted", "save", "The host account for Ivy is blacklisted in this server. I cannot save personal"
                                 " memories for its message-proxy identities."),
    ("host_full_privacy", "save", "The host account for Ivy has full privacy enabled. I cannot save personal memories"
                                  " for its message-proxy identities."),
    ("host_blacklisted", "update", "The host account for Ivy is blacklisted in this server. I cannot update personal"
                                   " memories for its message-proxy identities."),
    ("host_full_privacy", "update", "The host account for Ivy has full privacy enabled. I cannot update personal"
                                    " memories for its message-proxy identities."),
    # Worker-only (fail closed): TomoriBot saves for an identity with no host; worded in its style.
    ("no_host", "save", "The host account for Ivy could not be found. I cannot save personal memories for its"
                        " message-proxy identities."),
])
def test_host_protection_reasons(why: Any, verb: Any, expected: str) -> None:
    """memoryTool.ts @60e529b0 (save) and updateLongTermMemoryTool.ts @b0937881 (update)."""
    assert tool_texts.host_protection_reason("Ivy", why, verb) == expected


@pytest.mark.parametrize(("display", "global_name", "username", "label"), [
    ("Mika", "Mika G", "mika_01", "Mika (@mika_01)"),
    ("mika_01", None, "mika_01", "mika_01"),
    ("MIKA_01", None, "mika_01", "MIKA_01"),  # the same ignoring case: the display name alone
    (None, "Mika G", "mika_01", "Mika G (@mika_01)"),
    (" ", None, "mika_01", "mika_01"),
    (" Mika ", None, " mika_01 ", "Mika (@mika_01)"),
])
def test_discord_user_labels(display: str | None, global_name: str | None, username: str, label: str) -> None:
    """targetResolver.ts formatDiscordUserLabel."""
    assert tool_texts.format_discord_user_label(display, global_name, username) == label


@pytest.mark.parametrize(("label", "bridge", "name"), [
    ("Alice", "Alice (Matrix)", "Alice"),
    ("Alice (Matrix)", "Alice (Matrix)", "Alice"),
    ("Alice(Matrix)", "Alice(Matrix)", "Alice(Matrix)"),  # no blank before the mark: kept
    ("Alice  (Matrix)", "Alice  (Matrix)", "Alice"),
])
def test_bridge_labels(label: str, bridge: str, name: str) -> None:
    """targetResolver.ts formatBridgeUserLabel; memoryTool.ts's `replace(/\\s+\\(Matrix\\)$/u, "")`."""
    assert tool_texts.format_bridge_label(label) == bridge
    assert tool_texts.bridge_display_name(tool_texts.format_bridge_label(label)) == name


def test_footer_keys() -> None:
    """memoryTool.ts and updateLongTermMemoryTool.ts: a server memory's footer whatever the
    switches; a personal one's: personalization off, then blacklisted, then manage."""
    def key(scope: Scope, enabled: bool, blacklisted: bool) -> str:
        return tool_texts.footer_key(scope, personalization_enabled=enabled, blacklisted=blacklisted)

    assert key("personal", False, True) == "genai.self_teach.personal_memory_footer_personalization_disabled"
    assert key("personal", True, True) == "genai.self_teach.personal_memory_footer_user_blacklisted"
    assert key("personal", True, False) == "genai.self_teach.personal_memory_footer_manage"
    assert key("server", False, True) == key("server", True, False) == "genai.self_teach.server_memory_footer"


def test_embeds_as_the_tools_pass_them() -> None:
    """updateLongTermMemoryTool.ts @b0937881 (the create's "learned" embeds: test_tomoribot_create_parity.py):
    the id passed as `memoryId.toString()`."""
    personal = tool_texts.memory_embed("updated", "personal", persona_nickname="Tomori", user_nickname="Mika",
                                       content="x", footer_key="f", memory_id=9)
    assert personal["color"] == "memory_update"
    assert personal["title_key"] == "genai.self_teach.personal_memory_updated_title"
    assert personal["title_vars"] == {"user_nickname": "Mika", "persona_nickname": "Tomori"}
    assert personal["description_vars"] == {"user_nickname": "Mika", "memory_id": "9", "memory_content": "x"}
    deleted = tool_texts.memory_embed("deleted", "server", persona_nickname="Tomori", user_nickname=None,
                                      content="x", footer_key="f", memory_id=9)
    assert (deleted["color"], deleted["description_key"], deleted["ref"]) == (
        "error", "genai.self_teach.server_memory_deleted_description", None)
    assert deleted["description_vars"] == {"memory_id": "9", "memory_content": "x"}
    with pytest.raises(ValueError, match="names its id"):
        tool_texts.memory_embed("deleted", "server", persona_nickname="T", user_nickname=None, content="x",
                                footer_key="f")
    with pytest.raises(ValueError, match="names its user"):
        tool_texts.memory_embed("learned", "personal", persona_nickname="T", user_nickname=None, content="x",
                                footer_key="f")
