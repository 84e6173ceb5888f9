"""Reading the model's raw `create_long_term_memory` arguments (docs/design.md, section 4 step 1).

A model's bad arguments are an ordinary outcome, so nothing here raises: the result is either
`ToolArguments` or `InvalidArguments` whose reason names the parameter, for the model to fix
its call. Decisions beyond the spec:

- `tool_args` must already be a JSON object; a JSON string holding an object is refused (the
  bot decodes the provider's argument string, the worker does not guess).
- With `server_wide` the target parameters are ignored whatever their type: they cannot
  change the outcome, and refusing a valid save over them would only cost a retry.
- `target_user_discord_id` also accepts a JSON integer (not a bool, not a float) and reads it
  as its decimal string: ids are strings on the wire, but models sometimes emit snowflakes as
  numbers. Python keeps the integer exact, and a number the bot already rounded simply
  matches nobody. Every other parameter must be a string when present and not null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.domain.model import ToolScope

__all__ = ["TARGET_PARAMETERS", "TOOL_SCOPES", "InvalidArguments", "ToolArguments", "parse_tool_args"]

TOOL_SCOPES: tuple[ToolScope, ...] = ("server_wide", "target_user")
# Legacy aliases after the current name: the first non-blank one is the target.
TARGET_PARAMETERS = ("target_user", "target_user_nickname", "target_user_discord_id")


@dataclass(frozen=True, slots=True)
class ToolArguments:
    content: str  # as the model wrote it; sanitized later, after any `{user}` substitution
    scope: ToolScope
    target: str | None  # stripped; set exactly when scope is target_user


@dataclass(frozen=True, slots=True)
class InvalidArguments:
    reason: str


# A NUL cannot be stored (PostgreSQL text): a model's stray control character is its error.
_NUL_REASON = "{name} must not contain NUL characters (\\u0000)"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _content(args: dict[str, Any]) -> str | InvalidArguments:
    value = args.get("memory_content")
    if value is None:
        return InvalidArguments("memory_content is required: give the fact to remember as a string")
    if not isinstance(value, str):
        return InvalidArguments(f"memory_content must be a string, got {_json_type(value)}")
    if not value.strip():
        return InvalidArguments("memory_content must not be empty or only whitespace")
    if "\x00" in value:
        return InvalidArguments(_NUL_REASON.format(name="memory_content"))
    return value


def _scope(args: dict[str, Any]) -> ToolScope | InvalidArguments:
    value = args.get("memory_scope")
    if value is None:
        return InvalidArguments("memory_scope is required: use 'server_wide' or 'target_user'")
    if not isinstance(value, str):
        return InvalidArguments(
            f"memory_scope must be one of 'server_wide' or 'target_user', got {_json_type(value)}"
        )
    if value not in TOOL_SCOPES:
        shown = value if len(value) <= 40 else value[:40] + "..."
        return InvalidArguments(f"memory_scope must be one of 'server_wide' or 'target_user', got {shown!r}")
    return value


def _target(args: dict[str, Any]) -> str | InvalidArguments:
    for name in TARGET_PARAMETERS:
        value = args.get(name)
        if value is None:
            continue
        if name == "target_user_discord_id" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        elif not isinstance(value, str):
            return InvalidArguments(f"{name} must be a string, got {_json_type(value)}")
        if "\x00" in value:
            return InvalidArguments(_NUL_REASON.format(name=name))
        value = value.strip()
        if value:
            return value
    return InvalidArguments(
        "target_user is required when memory_scope is 'target_user': give the person's name "
        "as shown in the conversation, or use memory_scope 'server_wide'"
    )


def parse_tool_args(raw: Any) -> ToolArguments | InvalidArguments:
    """Validate the model's arguments; the first problem found is the one reported."""
    if not isinstance(raw, dict):
        return InvalidArguments(
            "the arguments must be an object with memory_content and memory_scope, "
            f"got {_json_type(raw)}"
        )
    content = _content(raw)
    if isinstance(content, InvalidArguments):
        return content
    scope = _scope(raw)
    if isinstance(scope, InvalidArguments):
        return scope
    if scope == "server_wide":
        return ToolArguments(content, scope, None)
    target = _target(raw)
    if isinstance(target, InvalidArguments):
        return target
    return ToolArguments(content, scope, target)
