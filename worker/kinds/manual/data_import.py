"""The `memory.manual` import: TomoriBot's data import of memories (docs/design.md, section 8.1).

TomoriBot's bundle import (ImportRepository.importWorkspaceMemoryBundle and
importPersonalMemoryBundle, Bredrumb/TomoriBot@7e828268), one lineage per command: every entry
is validated first (one blank or over-long entry refuses it all), a merge skips entries equal
to a stored row of the exact lineage or to an earlier entry (TomoriBot's memoryKey: whitespace
runs collapsed, tags as a set), and the cap is checked before anything is written. Where the
worker differs, on purpose:
- The cap is the worker's count (a personal lineage's cap includes the global rows, section 5),
  not the lineage's rows alone: what a replace keeps of the owner's other rows counts too, so
  no import can leave an owner above its cap.
- Tags follow the panels' rules (dropped when unusable) where TomoriBot's file schema refuses
  the file; content is trimmed.
- An import that would add nothing is never refused for the cap, even for an owner already
  above it.
- Server imports are for managers (`managers-only`); a personal one follows the panel's
  privacy and host rules, which a replace that only deletes (no entries) passes, as a remove does.
"""

from __future__ import annotations

import re

from contracts.kinds.manual import EMPTY_CONTENT, LIMIT_REACHED, ManualMemory
from worker.domain.content import js_trim
from worker.domain.memory import MemoryEntry
from worker.domain.tags import parse_tags
from worker.domain.workspace import Limits
from worker.kinds.manual.context import ManualContext
from worker.kinds.manual.decided import Import, ManualDecision, Refuse
from worker.kinds.manual.panel import PanelOwner, first_of_each, too_long

__all__ = ["decide_import", "duplicate_key"]

_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACE_RUN = re.compile(f"[{_JS_SPACE}]+")
_EDGE_QUOTES = re.compile(r"^[\"']+|[\"']+$")


def _collapsed(text: str) -> str:
    return _SPACE_RUN.sub(" ", text).strip(" ")


def duplicate_key(entry: MemoryEntry) -> tuple[str, frozenset[str]]:
    """When a merge counts two memories as one (TomoriBot's memoryKey/normalizeMemoryItem): the
    text with whitespace runs collapsed and trimmed, and the set of tags, each with straight
    quotes at its ends stripped and its whitespace collapsed. Case counts."""
    return _collapsed(entry.content), frozenset(_collapsed(_EDGE_QUOTES.sub("", tag)) for tag in entry.tags)


def _import_entries(cmd: ManualMemory, limits: Limits) -> list[MemoryEntry] | Refuse:
    """Every entry validated before anything else: one bad entry refuses the whole import."""
    if cmd.entries is None:
        return Refuse(EMPTY_CONTENT, "The import has no entries, so nothing was imported.")
    entries: list[MemoryEntry] = []
    for position, entry in enumerate(cmd.entries, start=1):
        content = js_trim(entry.content)  # TomoriBot's trim: JavaScript's white space
        if not content:
            return Refuse(EMPTY_CONTENT,
                          f"Memory {position} of the import is empty, so nothing was imported. "
                          "Remove it from the file and try again.")
        if refusal := too_long(content, limits, f"Memory {position} of the import"):
            return refusal
        entries.append(MemoryEntry(content, parse_tags(entry.tags)))
    return entries


def decide_import(cmd: ManualMemory, ctx: ManualContext, limits: Limits, owner: PanelOwner) -> ManualDecision:
    entries = _import_entries(cmd, limits)
    if isinstance(entries, Refuse):
        return entries
    replace = cmd.strategy == "replace"
    if replace:
        # TomoriBot's replace inserts every entry as given, repeats included.
        kept, skipped = entries, 0
        staying = max(ctx.count - len(ctx.lineage_rows), 0)  # the owner's rows the cap counts beside these
    else:
        kept, skipped = first_of_each(entries, duplicate_key, map(duplicate_key, ctx.lineage_rows))
        staying = ctx.count
    if kept and staying + len(kept) > owner.cap:
        available = max(owner.cap - staying, 0)
        if not replace:
            room = f"only {available} more fit under the limit of {owner.cap}"
        elif staying:
            room = f"only {available} fit under the limit of {owner.cap} beside the {staying} other memories it counts"
        else:
            room = f"the limit is {owner.cap}"
        return Refuse(
            LIMIT_REACHED,
            f"The import has {len(kept)} new memories, but {room}, so nothing was imported. "
            f"Remove some with {owner.panel}, or import fewer.",
            {"available": available, "requested": len(kept)},
        )
    return Import(tuple(kept), replace, skipped)
