"""The answer of a command whose result is an `OpResult` (memory.manual, memory.reinforce,
memory.seed_bio; docs/design.md, section 8): what a done answer and a given-up one share.

Each kind's builder (worker/kinds/<kind>/rendering.py) fills exactly the `OpData` fields its
status calls for; the others stay unset and are left out of the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.op_result import OpData, OpResult
from contracts.result_parts import FAILED, CacheKey


def done(command_id: str, data: OpData, invalidated: Iterable[CacheKey] = ()) -> OpResult:
    return OpResult(command_id=command_id, success=True, data=data, invalidated=list(invalidated))


def failed(command_id: str, reason: str) -> OpResult:
    """The answer for a command the worker gave up on after its retries (it went to the DLQ)."""
    return OpResult(command_id=command_id, success=False, error=reason, data=OpData(status=FAILED, reason=reason))
