"""`memory.reinforce`: the memories a reply used, the result and its statuses."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import Meta, Struct

from ..envelope import Envelope
from ..fields import LineageId, MemoryId, MemoryScope
from ..result_parts import Failed, OpDataBase, OpResultBase


class MemoryRef(Struct, frozen=True):
    """One memory a reply used.

    Attributes:
        scope: server or personal: which table memory_id is from.
        memory_id: Its server_memory_id or personal_memory_id.
    """

    scope: MemoryScope
    memory_id: MemoryId


class ReinforceMemories(Envelope, kw_only=True, frozen=True):
    """`memory.reinforce`: the memories a reply used.

    Reinforcing marks a memory as recently used (last_reinforced_at now, reinforcement_count
    plus one), which keeps it from being evicted as dormant. It changes nothing a bot shows.

    Attributes:
        lineage_id: The lineage of the persona that replied. Server memories count only when
            they belong to this workspace and lineage; personal ones when they are of this
            lineage or global (lineage 0).
        memories: The memories the reply used: those the model was given for it (at most 500).
            Ids that do not qualify, or no longer exist, are ignored.
    """

    lineage_id: LineageId
    memories: Annotated[list[MemoryRef], Meta(max_length=500)] = []


ReinforceStatus = Literal["reinforced", Failed]
REINFORCED: Final[ReinforceStatus] = "reinforced"


class ReinforceData(OpDataBase, kw_only=True):
    """`data` of a reinforcement's result.

    Attributes:
        status: reinforced (with count), or failed when the worker gave up.
    """

    status: ReinforceStatus


class ReinforceResult(OpResultBase, kw_only=True):
    """Result of memory.reinforce."""

    data: ReinforceData
