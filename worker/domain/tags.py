"""Memory tags as the `/memories` and `/personal memories` panels parse them (docs/design.md, section 8.1).

The panels accept raw comma-separated text or a list; the worker parses both the same way so
a memory saved through the worker carries exactly the tags the panel would have stored. A tag
that starts with `#` names a channel and is kept with its `#`.

Beyond the spec: the 32-character limit counts UTF-16 code units (JavaScript's `length`),
like every other length the panels enforce (see `content.utf16_length`).
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.domain.content import utf16_length

__all__ = ["CHANNEL_PREFIX", "MAX_TAGS", "MAX_TAG_LENGTH", "parse_tags"]

MAX_TAGS = 5
MAX_TAG_LENGTH = 32
CHANNEL_PREFIX = "#"
# Straight and curly quotes: people paste tags from chat, where clients curl quotes.
_QUOTES = "'\"\u2018\u2019\u201c\u201d"


def _pieces(raw: str | list[str]) -> Iterable[str]:
    items = [raw] if isinstance(raw, str) else raw
    for item in items:
        yield from item.split(",")


def _clean(piece: str) -> str:
    """Trim and strip surrounding quotes until neither changes anything (`" 'tea' "` is `tea`)."""
    tag = piece.strip()
    while True:
        stripped = tag.strip(_QUOTES).strip()
        if stripped == tag:
            return tag
        tag = stripped


def _usable(tag: str) -> bool:
    # A bare `#` names no channel: it is as empty as an empty tag.
    return bool(tag) and tag != CHANNEL_PREFIX and utf16_length(tag) <= MAX_TAG_LENGTH


def parse_tags(raw: str | list[str] | None) -> tuple[str, ...]:
    """At most 5 distinct tags (case-insensitively), in the order given, each at most 32 long."""
    if not raw:
        return ()
    kept: list[str] = []
    seen: set[str] = set()
    for piece in _pieces(raw):
        tag = _clean(piece)
        key = tag.casefold()
        if not _usable(tag) or key in seen:
            continue
        seen.add(key)
        kept.append(tag)
        if len(kept) == MAX_TAGS:
            break
    return tuple(kept)
