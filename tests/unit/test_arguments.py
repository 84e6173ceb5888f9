"""Parsing the model's raw `create_long_term_memory` arguments."""

from __future__ import annotations

from typing import Any

import pytest

from worker.domain.arguments import InvalidArguments, ToolArguments, parse_tool_args


def _reason(raw: Any) -> str:
    parsed = parse_tool_args(raw)
    assert isinstance(parsed, InvalidArguments), parsed
    return parsed.reason


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (None, "null"),
        ("memory_content: tea", "string"),
        ('{"memory_content": "x", "memory_scope": "server_wide"}', "string"),
        ([{"memory_content": "x"}], "array"),
        (42, "number"),
        (1.5, "number"),
        (True, "boolean"),
    ],
)
def test_tool_args_must_be_an_object(raw: Any, kind: str) -> None:
    reason = _reason(raw)
    assert "must be an object" in reason
    assert f"got {kind}" in reason


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"memory_scope": "server_wide"}, "memory_content is required"),
        ({"memory_content": None, "memory_scope": "server_wide"}, "memory_content is required"),
        ({"memory_content": 5, "memory_scope": "server_wide"}, "memory_content must be a string, got number"),
        ({"memory_content": ["a"], "memory_scope": "server_wide"}, "memory_content must be a string, got array"),
        ({"memory_content": {"a": 1}, "memory_scope": "server_wide"}, "memory_content must be a string, got object"),
        ({"memory_content": False, "memory_scope": "server_wide"}, "memory_content must be a string, got boolean"),
        ({"memory_content": "", "memory_scope": "server_wide"}, "memory_content must not be empty"),
        ({"memory_content": " \n\t ", "memory_scope": "server_wide"}, "memory_content must not be empty"),
    ],
)
def test_memory_content_errors_name_the_parameter(raw: dict[str, Any], fragment: str) -> None:
    assert fragment in _reason(raw)


@pytest.mark.parametrize(
    ("scope", "fragment"),
    [
        ("global", "memory_scope must be one of 'server_wide' or 'target_user', got 'global'"),
        ("Server_Wide", "got 'Server_Wide'"),
        (" server_wide", "got ' server_wide'"),
        ("", "got ''"),
        (1, "memory_scope must be one of 'server_wide' or 'target_user', got number"),
        (["server_wide"], "got array"),
    ],
)
def test_memory_scope_enum_and_type_errors(scope: Any, fragment: str) -> None:
    assert fragment in _reason({"memory_content": "x", "memory_scope": scope})


def test_memory_scope_required() -> None:
    assert "memory_scope is required" in _reason({"memory_content": "x"})


def test_content_is_checked_before_scope() -> None:
    assert _reason({"memory_content": "", "memory_scope": "nope"}).startswith("memory_content")


def test_server_wide_ignores_target_parameters_whatever_their_type() -> None:
    parsed = parse_tool_args(
        {"memory_content": "{user} likes tea", "memory_scope": "server_wide", "target_user": 7}
    )
    assert parsed == ToolArguments("{user} likes tea", "server_wide", None)


def test_content_is_returned_unchanged() -> None:
    parsed = parse_tool_args({"memory_content": "  {name} likes tea ", "memory_scope": "server_wide"})
    assert isinstance(parsed, ToolArguments)
    assert parsed.content == "  {name} likes tea "


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ({"target_user": "Alice"}, "Alice"),
        ({"target_user": "  Alice  "}, "Alice"),
        ({"target_user_nickname": "Ali"}, "Ali"),
        ({"target_user_discord_id": "123456789012345678"}, "123456789012345678"),
        ({"target_user_discord_id": 123456789012345678}, "123456789012345678"),
        ({"target_user": "Alice", "target_user_nickname": "Bob"}, "Alice"),
        ({"target_user": "  ", "target_user_nickname": "Bob"}, "Bob"),
        ({"target_user": "", "target_user_nickname": "", "target_user_discord_id": " 42 "}, "42"),
        ({"target_user": None, "target_user_nickname": "Bob"}, "Bob"),
        ({"target_user_nickname": "Bob", "target_user_discord_id": "42"}, "Bob"),
    ],
)
def test_target_is_first_non_blank_alias(targets: dict[str, Any], expected: str) -> None:
    parsed = parse_tool_args({"memory_content": "x", "memory_scope": "target_user", **targets})
    assert parsed == ToolArguments("x", "target_user", expected)


@pytest.mark.parametrize(
    "targets",
    [{}, {"target_user": ""}, {"target_user": "   "}, {"target_user": None, "target_user_nickname": " "}],
)
def test_target_required_for_target_user_scope(targets: dict[str, Any]) -> None:
    reason = _reason({"memory_content": "x", "memory_scope": "target_user", **targets})
    assert "target_user is required" in reason


@pytest.mark.parametrize(
    ("targets", "fragment"),
    [
        ({"target_user": 5}, "target_user must be a string, got number"),
        ({"target_user": ["Alice"]}, "target_user must be a string, got array"),
        ({"target_user_nickname": {"n": 1}}, "target_user_nickname must be a string, got object"),
        ({"target_user_discord_id": True}, "target_user_discord_id must be a string, got boolean"),
        ({"target_user_discord_id": 1.0}, "target_user_discord_id must be a string, got number"),
        ({"target_user": 5, "target_user_nickname": "Bob"}, "target_user must be a string"),
    ],
)
def test_target_type_errors_name_the_parameter(targets: dict[str, Any], fragment: str) -> None:
    assert fragment in _reason({"memory_content": "x", "memory_scope": "target_user", **targets})


def test_unknown_keys_are_ignored() -> None:
    parsed = parse_tool_args({"memory_content": "x", "memory_scope": "server_wide", "extra": [1]})
    assert parsed == ToolArguments("x", "server_wide", None)


@pytest.mark.parametrize("name", ["target_user", "target_user_nickname"])
def test_nul_in_a_target_is_refused_naming_the_parameter(name):
    result = parse_tool_args({"memory_content": "x", "memory_scope": "target_user", name: "Bo\x00b"})
    assert isinstance(result, InvalidArguments)
    assert result.reason == f"{name} must not contain NUL characters (\\u0000)"


def test_nul_in_content_is_refused():
    result = parse_tool_args({"memory_content": "tea\x00", "memory_scope": "server_wide"})
    assert isinstance(result, InvalidArguments) and "memory_content must not contain NUL" in result.reason


def test_a_long_bad_scope_is_shown_shortened():
    result = parse_tool_args({"memory_content": "x", "memory_scope": "g" * 500})
    assert isinstance(result, InvalidArguments) and len(result.reason) < 200
