"""The one result the worker builds for memory.manual, memory.reinforce and memory.seed_bio: every
status of the three kinds (each kind's own result, in its module, has only its own)."""

from __future__ import annotations

from typing import Literal

from .kinds.manual import ManualStatus
from .kinds.reinforce import ReinforceStatus
from .kinds.seed_bio import SeedBioStatus
from .result_parts import OpDataBase, OpResultBase

OpStatus = Literal[ManualStatus, ReinforceStatus, SeedBioStatus]


class OpData(OpDataBase, kw_only=True):
    """`data` of the other commands' results: a status, a reason, and what the status needs."""

    status: OpStatus


class OpResult(OpResultBase, kw_only=True):
    """Result of memory.manual, memory.reinforce and memory.seed_bio."""

    data: OpData
