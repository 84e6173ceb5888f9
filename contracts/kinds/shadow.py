"""`memory.shadow`: what a bot in shadow mode did itself, and how the worker paired it with its dry run."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from ..envelope import Envelope
from ..fields import NO_NUL, CommandId
from ..result_parts import Failed

# Every command kind but memory.shadow itself: the writes a bot may shadow (contracts/registry.py
# adds "shadow" to make CommandKind).
ShadowedKind = Literal["create", "manual", "reinforce", "seed_bio", "update"]


class ShadowReport(Envelope, kw_only=True, frozen=True):
    """`memory.shadow`: what a bot that still writes itself did, after asking the worker for
    the dry run of the same command (shadow mode, docs/design.md section 3.6). The worker pairs
    it with its dry run and records whether the two agreed (`memoryctl shadow report`).

    Attributes:
        shadowed_id: The command_id of the dry run this reports on (the report's own
            command_id is a fresh one).
        kind: The kind of the shadowed command.
        timed_out: True when the dry run's answer did not come within the bot's timeout: the
            pair is counted as timed out, never compared.
        result: What the bot's own write gave, in the shadowed kind's result shape (`success`,
            `message` or `error`, `data` with its `status`, `reason`, ids and the rest, `notice`):
            every field given is compared with the dry run's; a field left out is not.
            null when the bot's own write threw (see `error`).
        error: The bot's own write threw: its message (the pair is counted as differing).
    """

    shadowed_id: CommandId
    kind: ShadowedKind
    timed_out: bool = False
    result: dict[str, Any] | None = None
    error: Annotated[str, Meta(max_length=2000, pattern=NO_NUL)] | None = None

    def __post_init__(self) -> None:
        # `result` is stored as jsonb, which cannot hold NUL or an infinite number (a literal
        # beyond a double, read as JSON.parse reads it): refused at decoding, like every typed
        # string (msgspec reports the ValueError as the command's validation error).
        if self.result is not None:
            if _holds(self.result, lambda v: isinstance(v, str) and "\x00" in v):
                raise ValueError("`result` holds a NUL character (\\u0000), which cannot be stored")
            if _holds(self.result, lambda v: isinstance(v, float) and not math.isfinite(v)):
                raise ValueError("`result` holds a number beyond a double (such as 1e400), which cannot be stored")


def _holds(value: Any, found: Callable[[Any], bool]) -> bool:
    """Does the JSON value, or any key or value within it, satisfy `found`?"""
    if found(value):
        return True
    if isinstance(value, dict):
        return any(found(k) or _holds(v, found) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds(v, found) for v in value)
    return False


ShadowOutcome = Literal["agreed", "differed", "concurrent", "timed_out", "unpaired", "nothing_compared"]


class ShadowDifference(Struct, kw_only=True):
    """One field on which a bot's own write and the worker's dry run disagreed.

    Attributes:
        field: The field's path in the result, dotted (`data.status`, `data.reason`, `notice.footer`).
        worker: The dry run's value (null: absent from its result).
        bot: The bot's value.
    """

    field: str
    worker: Any = None
    bot: Any = None


class ShadowData(Struct, kw_only=True):
    """`data` of a shadow report's result.

    Attributes:
        status: recorded; failed when the worker gave up on the report (it is not recorded).
        outcome: How the pair came out (null when failed): agreed (every field the bot gave is the dry run's),
            differed (a real disagreement: see differences), concurrent (they differ, and an
            insert of the same owner and scope came between the dry run and the bot's own
            write: not comparable), timed_out (the bot had no dry-run answer in time),
            unpaired (no dry run of this command_id by this bot and workspace reached the
            worker), nothing_compared (the bot's result held no field to compare: `{}`,
            `{"data": {}}`; never an agreement).
        differences: The fields that differed, with both values (differed and concurrent); a
            credential is shown as its kind only, and a long value as its size.
    """

    status: Literal["recorded", Failed]
    outcome: ShadowOutcome | None = None
    differences: list[ShadowDifference] = []


class ShadowResult(Struct, kw_only=True):
    """Result of memory.shadow: how the report was paired with its dry run.

    Attributes:
        command_id: The report this answers.
        success: True once recorded.
        data: The outcome and the differences.
    """

    command_id: str
    success: bool
    data: ShadowData
