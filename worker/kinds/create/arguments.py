"""Reading the model's raw `create_long_term_memory` arguments, as TomoriBot's MemoryTool reads
them (src/tools/functionCalls/memoryTool.ts, Bredrumb/TomoriBot@60e529b0; docs/design.md,
section 4 steps 1 and 3).

A model's bad arguments are an ordinary outcome, so nothing here raises. The declared
parameters are checked first (worker/domain/tool_arguments.py: memory_content, memory_scope
with its enum, target_user: checked even with server_wide). What the checks after that need is
read here and judged in order by worker/kinds/create/decision.py:

- the requested target (tool_arguments.requested_target, as the update tool reads it): the first
  of target_user, target_user_nickname, target_user_discord_id (the legacy names, undeclared)
  that is non-blank after trimming. TomoriBot trims them as
  strings, and a legacy name holding anything else throws there; the worker refuses it with
  the parameter check's words (`target_problem`), at the point TomoriBot would have thrown;
- the content as the model wrote it (it is trimmed and sanitized after any `{user}`
  substitution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.domain.scope import ToolScope
from worker.domain.tool_arguments import (
    Parameter,
    ParameterCheck,
    ParameterProblem,
    ToolParameters,
    requested_target,
    validate_parameters,
)

__all__ = [
    "CREATE_PARAMETERS",
    "TOOL_SCOPES",
    "InvalidArguments",
    "ToolArguments",
    "parse_tool_args",
]

TOOL_SCOPES: tuple[ToolScope, ...] = ("server_wide", "target_user")
CREATE_PARAMETERS = ToolParameters(
    properties={"memory_content": Parameter("string"), "memory_scope": Parameter("string", enum=TOOL_SCOPES),
                "target_user": Parameter("string")},
    required=("memory_content", "memory_scope"))


@dataclass(frozen=True, slots=True)
class ToolArguments:
    content: str  # as the model wrote it
    scope: ToolScope
    target: str | None  # the requested target, trimmed; None when none is given (whatever the scope)
    target_problem: ParameterProblem | None = None  # a legacy target name that is not a string
    target_parameter: str | None = None  # which name `target` (or `target_problem`) came from


@dataclass(frozen=True, slots=True)
class InvalidArguments:
    check: ParameterCheck


def parse_tool_args(raw: Any) -> ToolArguments | InvalidArguments:
    """Check the declared parameters; on success, what the later checks read."""
    check = validate_parameters(raw, CREATE_PARAMETERS)
    if not check.ok:
        return InvalidArguments(check)
    target = requested_target(raw)
    return ToolArguments(raw["memory_content"], raw["memory_scope"], target.text, target.problem, target.parameter)
