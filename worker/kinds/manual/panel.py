"""What the panel actions share (docs/design.md, section 8.1): whose memories a command touches, as
far as the cap and the wording go, and the content checks every manual write makes."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from contracts.kinds.manual import CONTENT_TOO_LONG, EMPTY_CONTENT, ManualMemory
from worker.domain.content import utf16_length
from worker.domain.workspace import Limits
from worker.kinds.manual.decided import Refuse

__all__ = ["EMPTY", "PERSONAL_PANEL", "SERVER_PANEL", "PanelOwner", "first_of_each", "panel_owner", "too_long"]

T = TypeVar("T")

SERVER_PANEL = "/memories"
PERSONAL_PANEL = "/personal memories"


@dataclass(frozen=True, slots=True)
class PanelOwner:
    """Whose memories the command touches, as far as the wording and the cap go."""

    cap: int
    panel: str
    has: str  # "This server has", "You have", ...: the start of the limit sentences
    only_own: bool  # a non-manager on server memories: rows taught by others are invisible


def panel_owner(cmd: ManualMemory, limits: Limits) -> PanelOwner:
    if cmd.scope == "server":
        return PanelOwner(limits.max_server_memories, SERVER_PANEL, "This server has", not cmd.actor.is_manager)
    has = "This identity has" if cmd.identity_id is not None else "You have"
    return PanelOwner(limits.max_personal_memories, PERSONAL_PANEL, has, False)


EMPTY = Refuse(EMPTY_CONTENT, "The memory is empty; write the fact to remember and try again.")


def too_long(content: str, limits: Limits, which: str = "The memory") -> Refuse | None:
    length = utf16_length(content)
    if length <= limits.max_memory_length:
        return None
    return Refuse(
        CONTENT_TOO_LONG,
        f"{which} is too long: {length} characters, and the limit is {limits.max_memory_length}. "
        "Shorten it and try again.",
    )


def first_of_each(items: Iterable[T], key: Callable[[T], Hashable], seen: Iterable[Hashable]) -> tuple[list[T], int]:
    """The items whose key is not among `seen` nor an earlier item's, in order, and how many were skipped."""
    known = set(seen)
    kept: list[T] = []
    skipped = 0
    for item in items:
        k = key(item)
        if k in known:
            skipped += 1
            continue
        known.add(k)
        kept.append(item)
    return kept, skipped
