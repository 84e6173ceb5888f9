"""What memoryctl prints of text a bot, a model or a chat user chose, made safe for a terminal.

A terminal obeys what it is sent: ESC and C1 sequences clear the screen, hide text, retitle the
window or write the clipboard (OSC 52), BEL rings, a carriage return overwrites the line, and
a bidi override or isolate reorders what follows it. A memory, a dead letter's subject or a
bot's reported status printed raw could do any of it to the operator reading them. Here each
such character is shown as an escape instead (\\x1b, \\u202e): what the text holds, never
what it would do. Table cells are cut to a width, so one huge value cannot widen every row.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from functools import lru_cache
from typing import Any

CUT = "…"  # ends a cell that was cut
# Control (C0, DEL, C1), format (bidi overrides and isolates, zero-width, tag characters),
# surrogates (a lone one cannot even be encoded) and the line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@lru_cache(maxsize=4096)
def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _tokens(text: str, keep_newlines: bool) -> list[str]:
    return [_escape(ch) if _unsafe(ch) and not (keep_newlines and ch == "\n") else ch for ch in text]


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control, format and separator character escaped (newlines kept when
    `keep_newlines`: a block of several lines)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_tokens(text, keep_newlines))


def cell(text: str, width: int) -> str:
    """One table cell: `text` visible on one line, at most `width` characters; a longer one is
    cut (never inside an escape) and ends in CUT."""
    tokens = _tokens(text, keep_newlines=False)
    if sum(map(len, tokens)) <= width:
        return "".join(tokens)
    kept, used = [], 0
    for token in tokens:
        if used + len(token) > width - len(CUT):
            break
        kept.append(token)
        used += len(token)
    return "".join(kept) + CUT


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """`value` as JSON whose strings escape what `visible` does, as JSON escapes: the same value
    for a program reading it, nothing a terminal obeys. (json.dumps escapes C0 itself, not DEL,
    C1 or the format characters; ensure_ascii would escape every other language too.)"""
    text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    return "".join(_json_escape(ch) if ch != "\n" and _unsafe(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: a JSON escape is a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def say(text: str) -> None:
    """memoryctl's output: every line it prints, whatever it holds, reaches the terminal visible."""
    print(visible(text, keep_newlines=True))


def ask(question: str) -> bool | None:
    """A yes or no from the operator at the terminal; None when there is no terminal to ask on
    (a pipe, a cron job, a CI step), so that the caller refuses instead of deciding for them."""
    if not sys.stdin.isatty():
        return None
    try:
        answer = input(visible(question))
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
