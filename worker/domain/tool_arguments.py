"""TomoriBot's check of a model tool's declared parameters (`BaseTool.validateParameters`,
src/types/tool/interfaces.ts), for every tool the worker carries out (create and update).

A tool declares its parameters (`ToolParameters`: each one's JSON type, and for a string an
optional enum, plus the required names). The check, as TomoriBot runs it:

- a required parameter is missing when it is absent or JSON null;
- every other argument that is declared and not null must have the declared type, named as
  JavaScript names it (`Array.isArray(v) ? "array" : typeof v`: string, number, boolean,
  object, array); an undeclared argument is ignored whatever it holds;
- a declared string with an enum must be one of its values (case and blanks count);
- type and enum problems are listed in the order of the arguments, missing ones in the order
  of `required`, and the text names the problems when there are any, else the missing ones.

The result is a `ParameterCheck` saying what was found (which parameter, what type was wanted and given),
stored in a decision as they are; worker/domain/tool_texts.py words them.

Both tools then read the requested target the same way (`requested_target`): the first of
target_user and TomoriBot's legacy names that is non-blank after JavaScript's trim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from worker.domain.content import js_trim

__all__ = [
    "JsonType",
    "Parameter",
    "ParameterCheck",
    "ParameterProblem",
    "RequestedTarget",
    "TARGET_PARAMETERS",
    "ToolParameters",
    "json_type",
    "requested_target",
    "validate_parameters",
]

JsonType = Literal["string", "number", "boolean", "object", "array"]


@dataclass(frozen=True, slots=True)
class Parameter:
    """One declared parameter: its JSON type, and for a string the values it may take."""

    type: JsonType
    enum: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ToolParameters:
    """A tool's parameter declaration (TomoriBot's `ToolParameterSchema`, flat)."""

    properties: Mapping[str, Parameter]
    required: tuple[str, ...]


class ParameterProblem(msgspec.Struct, frozen=True, omit_defaults=True):
    """A declared argument of the wrong type (`actual` set) or outside its enum (`allowed` set)."""

    parameter: str
    expected: str  # the declared JSON type
    actual: str | None = None  # the type given, as JavaScript names it
    allowed: list[str] | None = None  # the enum the string is not in


class ParameterCheck(msgspec.Struct, frozen=True, omit_defaults=True):
    """What `validate_parameters` found: empty when the arguments pass."""

    problems: list[ParameterProblem] = []
    missing: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems and not self.missing


def json_type(value: Any) -> str:
    """The type JavaScript reports for a decoded JSON value (`typeof`, arrays as "array")."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    # JSON null and objects: JavaScript's typeof says "object" for both.
    return "object"


def validate_parameters(args: Any, declared: ToolParameters) -> ParameterCheck:
    """TomoriBot's `validateParameters(args)`. Anything but a JSON object counts as an object
    with no arguments (TomoriBot is always handed one; the worker words the rest alike)."""
    given: Mapping[str, Any] = args if isinstance(args, dict) else {}
    missing = [name for name in declared.required if given.get(name) is None]
    problems: list[ParameterProblem] = []
    for name, value in given.items():
        parameter = declared.properties.get(name)
        if value is None or parameter is None:
            continue
        actual = json_type(value)
        if actual != parameter.type:
            problems.append(ParameterProblem(name, parameter.type, actual=actual))
        elif parameter.enum is not None and isinstance(value, str) and value not in parameter.enum:
            problems.append(ParameterProblem(name, parameter.type, allowed=list(parameter.enum)))
    return ParameterCheck(problems, missing)


# The target's names, the current one first, then TomoriBot's legacy aliases (undeclared, so
# never type-checked by validate_parameters).
TARGET_PARAMETERS = ("target_user", "target_user_nickname", "target_user_discord_id")


@dataclass(frozen=True, slots=True)
class RequestedTarget:
    """The target a tool call names: its text trimmed (None: none given) and the name it was
    read from; or, for a legacy name holding something else than a string, the problem."""

    text: str | None = None
    parameter: str | None = None
    problem: ParameterProblem | None = None


def requested_target(args: Any) -> RequestedTarget:
    """`target_user?.trim() || target_user_nickname?.trim() || target_user_discord_id?.trim()`:
    absent and null names are skipped, a blank one falls through to the next. TomoriBot's
    `.trim()` of a non-string throws there; the worker reports it as the parameter check would
    (`problem`), for the tool to refuse at the point TomoriBot would have thrown."""
    given: Mapping[str, Any] = args if isinstance(args, dict) else {}
    for name in TARGET_PARAMETERS:
        value = given.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return RequestedTarget(parameter=name, problem=ParameterProblem(name, "string", actual=json_type(value)))
        if trimmed := js_trim(value):
            return RequestedTarget(trimmed, name)
    return RequestedTarget()
