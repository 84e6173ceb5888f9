"""Reading the model's raw `update_long_term_memory` arguments as TomoriBot's tool reads them
(updateLongTermMemoryTool.ts and BaseTool.validateParameters, src/types/tool/interfaces.ts).

Nothing here raises: a model's bad arguments are an ordinary answer. What is read here is only
what the arguments say; worker/domain/update.py checks them in TomoriBot's order (the
declared parameters first, then self-teaching, then the values).

Where TomoriBot has no answer, the worker chooses one in TomoriBot's words:
- `tool_args` that is not a JSON object is read as an object with no keys (TomoriBot's tool is
  always handed an object).
- A legacy target name (`target_user_nickname`, `target_user_discord_id`, not declared, so
  never type-checked) of another type than a string, reached before a non-blank one: TomoriBot
  calls `.trim()` on it and throws; the worker refuses it as a declared parameter of the wrong
  type would be.
- A NUL character (`\\u0000`) in memory_content or a target name: PostgreSQL cannot store it;
  refused naming the parameter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

__all__ = [
    "MAX_SAFE_INTEGER",
    "UPDATE_PARAMETERS",
    "ParameterType",
    "Parameters",
    "ParameterProblems",
    "TypeMismatch",
    "UpdateArguments",
    "js_trim",
    "json_type",
    "read_update_args",
    "validate_parameters",
]

# shared with create: issue-37-create's tool_arguments (BaseTool.validateParameters' semantics).
# What JavaScript's String.prototype.trim() drops at either end: its WhiteSpace and
# LineTerminator characters. Python's str.strip() differs (it keeps U+FEFF, drops U+001C-U+001F
# and U+0085).
_JS_BLANKS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000\ufeff"


def js_trim(text: str) -> str:
    """JavaScript's `text.trim()`."""
    return text.strip(_JS_BLANKS)


ParameterType = Literal["string", "number", "boolean", "array", "object"]


@dataclass(frozen=True, slots=True)
class Parameters:
    """A tool's declared parameters: each one's JSON type (and the values a string may take),
    and the required ones in the order TomoriBot lists them."""

    types: Mapping[str, ParameterType]
    required: tuple[str, ...]
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class TypeMismatch(msgspec.Struct, frozen=True):
    """A declared parameter of another JSON type (`got`) than its declaration's (`expected`),
    or a string that is none of its enum's values (`allowed` set, `got` the type, string)."""

    name: str
    expected: str
    got: str
    allowed: tuple[str, ...] = ()


class ParameterProblems(msgspec.Struct, frozen=True):
    """What BaseTool.validateParameters found: type errors in the arguments' key order, and
    the required parameters missing (absent or null), in declaration order."""

    errors: tuple[TypeMismatch, ...] = ()
    missing: tuple[str, ...] = ()


def json_type(value: Any) -> str:
    """JavaScript's `Array.isArray(v) ? "array" : typeof v` for a decoded JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"  # a JSON object (JavaScript's typeof null is never asked: null is skipped)


def validate_parameters(args: Mapping[str, Any], declared: Parameters) -> ParameterProblems | None:
    """BaseTool.validateParameters: None when every required parameter is present and every
    declared one that is not null has its type (and, for a string with an enum, one of its
    values); unknown keys are ignored."""
    missing = tuple(name for name in declared.required if args.get(name) is None)
    errors: list[TypeMismatch] = []
    for name, value in args.items():
        expected = declared.types.get(name)
        if value is None or expected is None:
            continue
        got = json_type(value)
        if got != expected:
            errors.append(TypeMismatch(name, expected, got))
        elif isinstance(value, str) and value not in declared.enums.get(name, (value,)):
            errors.append(TypeMismatch(name, expected, got, declared.enums[name]))
    if not errors and not missing:
        return None
    return ParameterProblems(tuple(errors), missing)


# update_long_term_memory's declaration (updateLongTermMemoryTool.ts).
UPDATE_PARAMETERS = Parameters(types={"memory_id": "number", "memory_content": "string", "target_user": "string"},
                               required=("memory_id", "memory_content"))
# The target's names, read in this order: the first non-blank after trimming is the target.
TARGET_PARAMETERS = ("target_user", "target_user_nickname", "target_user_discord_id")
# JavaScript's Number.MAX_SAFE_INTEGER: a memory_id must be a safe integer.
MAX_SAFE_INTEGER = 2**53 - 1
# shared with create: end.


@dataclass(frozen=True, slots=True)
class UpdateArguments:
    """What the arguments say, each value as TomoriBot's checks need it."""

    parameters: ParameterProblems | None  # the declared parameters' problems (step 1)
    target: str | None  # the first non-blank target name, trimmed; None: none given
    # A legacy target name of another type reached before a non-blank one: (name, its JSON type).
    target_type_error: tuple[str, str] | None
    memory_id: int | None  # None: not a positive safe integer
    content: str | None  # the raw memory_content; None: not a string
    nul_in: str | None  # memory_content, or the name the target was read from, when it holds a NUL


def _memory_id(value: Any) -> int | None:
    """`typeof v === "number" && Number.isSafeInteger(v) && v > 0`, then `Math.trunc(v)`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    number = int(value)
    return number if 0 < number <= MAX_SAFE_INTEGER else None


def _target(args: Mapping[str, Any]) -> tuple[str | None, str, tuple[str, str] | None]:
    """`target_user?.trim() || target_user_nickname?.trim() || target_user_discord_id?.trim()`:
    null and absent names are skipped, a blank one falls through to the next. The target, the
    name it was read from, and a name of another type reached first (its name and type)."""
    for name in TARGET_PARAMETERS:
        value = args.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return None, name, (name, json_type(value))
        if trimmed := js_trim(value):
            return trimmed, name, None
    return None, "", None


def read_update_args(raw: Any) -> UpdateArguments:
    args: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    target, target_name, target_type_error = _target(args)
    content = args.get("memory_content")
    # Only what is kept can fail to be stored: the text, and the target name the answer may quote.
    kept: Sequence[tuple[str, Any]] = [("memory_content", content), (target_name, target)]
    nul_in = next((name for name, value in kept if isinstance(value, str) and "\x00" in value), None)
    return UpdateArguments(
        parameters=validate_parameters(args, UPDATE_PARAMETERS),
        target=target,
        target_type_error=target_type_error,
        memory_id=_memory_id(args.get("memory_id")),
        content=content if isinstance(content, str) else None,
        nul_in=nul_in,
    )
