"""Reading the model's raw `update_long_term_memory` arguments as TomoriBot's tool reads them
(updateLongTermMemoryTool.ts). The parameter check and the requested target are the create's
(worker/domain/tool_arguments.py: BaseTool.validateParameters, the target names).

Nothing here raises: a model's bad arguments are an ordinary answer. What is read here is only
what the arguments say; worker/kinds/update/decision.py checks them in TomoriBot's order (the
declared parameters first, then self-teaching, then the values).

Where TomoriBot has no answer, the worker chooses one in TomoriBot's words:
- `tool_args` that is not a JSON object is read as an object with no keys (TomoriBot's tool is
  always handed an object).
- A legacy target name (`target_user_nickname`, `target_user_discord_id`, not declared, so
  never type-checked) of another type than a string, reached before a non-blank one: TomoriBot
  calls `.trim()` on it and throws; the worker refuses it as a declared parameter of the wrong
  type would be, as the create does.
- A NUL character (`\\u0000`) in memory_content or the target name read: PostgreSQL cannot store
  it; refused naming the parameter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.domain.tool_arguments import (
    Parameter,
    ParameterCheck,
    ParameterProblem,
    ToolParameters,
    requested_target,
    validate_parameters,
)

__all__ = ["MAX_SAFE_INTEGER", "UPDATE_PARAMETERS", "UpdateArguments", "read_update_args"]

# update_long_term_memory's declaration (updateLongTermMemoryTool.ts); the legacy target names
# are not declared.
UPDATE_PARAMETERS = ToolParameters(
    properties={"memory_id": Parameter("number"), "memory_content": Parameter("string"),
                "target_user": Parameter("string")},
    required=("memory_id", "memory_content"))
# JavaScript's Number.MAX_SAFE_INTEGER: a memory_id must be a safe integer.
MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True, slots=True)
class UpdateArguments:
    """What the arguments say, each value as TomoriBot's checks need it."""

    check: ParameterCheck  # the declared parameters' problems (step 1); `ok` when none
    target: str | None  # the first non-blank target name, trimmed; None: none given
    target_problem: ParameterProblem | None  # a legacy target name of another type, reached first
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


def read_update_args(raw: Any) -> UpdateArguments:
    args: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    target = requested_target(args)
    content = args.get("memory_content")
    # Only what is kept can fail to be stored: the text, and the target name the answer may quote.
    kept: Sequence[tuple[str | None, Any]] = [("memory_content", content), (target.parameter, target.text)]
    nul_in = next((name for name, value in kept if isinstance(value, str) and "\x00" in value), None)
    return UpdateArguments(
        check=validate_parameters(args, UPDATE_PARAMETERS),
        target=target.text,
        target_problem=target.problem,
        memory_id=_memory_id(args.get("memory_id")),
        content=content if isinstance(content, str) else None,
        nul_in=nul_in,
    )
