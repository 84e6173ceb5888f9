"""Reading the model's raw `create_long_term_memory` arguments: TomoriBot's parameter check, then
what its later checks read (Bredrumb/TomoriBot src/tools/functionCalls/memoryTool.ts @60e529b0,
src/types/tool/interfaces.ts @034f1928). The words are held in test_tomoribot_tool_texts.py."""

from __future__ import annotations

from typing import Any

import pytest

from worker.domain.tool_arguments import ParameterCheck, ParameterProblem
from worker.kinds.create.arguments import CREATE_PARAMETERS, InvalidArguments, ToolArguments, parse_tool_args

SCOPES = ["server_wide", "target_user"]


def _check(raw: Any) -> ParameterCheck:
    parsed = parse_tool_args(raw)
    assert isinstance(parsed, InvalidArguments), parsed
    return parsed.check


def test_the_declaration_is_tomoribots() -> None:
    """memoryTool.ts: three declared strings, the scope's enum, two required."""
    assert {name: (p.type, p.enum) for name, p in CREATE_PARAMETERS.properties.items()} == {
        "memory_content": ("string", None), "memory_scope": ("string", tuple(SCOPES)), "target_user": ("string", None)}
    assert CREATE_PARAMETERS.required == ("memory_content", "memory_scope")


@pytest.mark.parametrize("raw", [None, "memory_content: tea", '{"memory_content": "x"}', [{"memory_content": "x"}],
                                 42, True])
def test_arguments_that_are_not_an_object_are_missing_both_required(raw: Any) -> None:
    assert _check(raw) == ParameterCheck(missing=["memory_content", "memory_scope"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"memory_scope": "server_wide"}, ParameterCheck(missing=["memory_content"])),
        ({"memory_content": None, "memory_scope": "server_wide"}, ParameterCheck(missing=["memory_content"])),
        ({"memory_content": 5, "memory_scope": "server_wide"},
         ParameterCheck([ParameterProblem("memory_content", "string", actual="number")])),
        ({"memory_content": "x", "memory_scope": "Server_Wide"},
         ParameterCheck([ParameterProblem("memory_scope", "string", allowed=SCOPES)])),
        ({"memory_content": "x", "memory_scope": ["server_wide"]},
         ParameterCheck([ParameterProblem("memory_scope", "string", actual="array")])),
        ({"memory_content": "x", "memory_scope": "server_wide", "target_user": 7},
         ParameterCheck([ParameterProblem("target_user", "string", actual="number")])),
        ({"target_user": False},
         ParameterCheck([ParameterProblem("target_user", "string", actual="boolean")],
                        ["memory_content", "memory_scope"])),
    ],
)
def test_the_parameter_check(raw: dict[str, Any], expected: ParameterCheck) -> None:
    assert _check(raw) == expected


def test_a_blank_content_passes_the_check_and_is_returned_unchanged() -> None:
    """TomoriBot refuses it a step later, in its own words (worker/kinds/create/decision.py)."""
    assert parse_tool_args({"memory_content": "  ", "memory_scope": "server_wide"}) == ToolArguments(
        "  ", "server_wide", None)
    parsed = parse_tool_args({"memory_content": "  {name} likes tea ", "memory_scope": "server_wide"})
    assert isinstance(parsed, ToolArguments) and parsed.content == "  {name} likes tea "


@pytest.mark.parametrize(
    ("targets", "expected", "name"),
    [
        ({"target_user": "Alice"}, "Alice", "target_user"),
        ({"target_user": "  Alice  "}, "Alice", "target_user"),
        ({"target_user": "\ufeffAlice\u3000"}, "Alice", "target_user"),  # JavaScript's trim
        ({"target_user_nickname": "Ali"}, "Ali", "target_user_nickname"),
        ({"target_user_discord_id": "123456789012345678"}, "123456789012345678", "target_user_discord_id"),
        ({"target_user": "Alice", "target_user_nickname": "Bob"}, "Alice", "target_user"),
        ({"target_user": "  ", "target_user_nickname": "Bob"}, "Bob", "target_user_nickname"),
        ({"target_user": "", "target_user_nickname": "", "target_user_discord_id": " 42 "}, "42",
         "target_user_discord_id"),
        ({"target_user": None, "target_user_nickname": "Bob"}, "Bob", "target_user_nickname"),
        # The first non-blank one wins: a later name of the wrong type is never read.
        ({"target_user": "Alice", "target_user_discord_id": 42}, "Alice", "target_user"),
    ],
)
@pytest.mark.parametrize("scope", SCOPES)
def test_target_is_the_first_non_blank_name(targets: dict[str, Any], expected: str, name: str, scope: str) -> None:
    """Read whatever the scope, as TomoriBot reads it before checking the scope."""
    parsed = parse_tool_args({"memory_content": "x", "memory_scope": scope, **targets})
    assert parsed == ToolArguments("x", scope, expected, target_parameter=name)  # type: ignore[arg-type]


@pytest.mark.parametrize("targets", [{}, {"target_user": ""}, {"target_user": "   "},
                                     {"target_user": None, "target_user_nickname": " "}])
def test_no_target(targets: dict[str, Any]) -> None:
    assert parse_tool_args({"memory_content": "x", "memory_scope": "target_user", **targets}) == ToolArguments(
        "x", "target_user", None)


@pytest.mark.parametrize(
    ("targets", "problem"),
    [
        ({"target_user_nickname": {"n": 1}}, ParameterProblem("target_user_nickname", "string", actual="object")),
        ({"target_user_discord_id": True}, ParameterProblem("target_user_discord_id", "string", actual="boolean")),
        # A snowflake sent as a number: TomoriBot's `?.trim()` throws on it.
        ({"target_user_discord_id": 123456789012345678},
         ParameterProblem("target_user_discord_id", "string", actual="number")),
        ({"target_user": " ", "target_user_nickname": 4},
         ParameterProblem("target_user_nickname", "string", actual="number")),
    ],
)
@pytest.mark.parametrize("scope", SCOPES)
def test_a_legacy_target_name_of_another_type_is_a_problem_for_later(targets: dict[str, Any],
                                                                     problem: ParameterProblem, scope: str) -> None:
    parsed = parse_tool_args({"memory_content": "x", "memory_scope": scope, **targets})
    assert isinstance(parsed, ToolArguments)
    assert (parsed.target, parsed.target_problem) == (None, problem)


def test_unknown_keys_are_ignored() -> None:
    parsed = parse_tool_args({"memory_content": "x", "memory_scope": "server_wide", "extra": [1]})
    assert parsed == ToolArguments("x", "server_wide", None)
