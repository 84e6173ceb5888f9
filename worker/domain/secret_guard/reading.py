"""How the secret guard reads a text: as it is shown, so that nothing invisible, no other
script's digits and no neighbouring letter of a script written without spaces hides a token."""

from __future__ import annotations

import re
import unicodedata

# Every known format's shortest match is longer than this: an unbroken ASCII run as long is what
# a format needs in the text to match at all.
LONGEST_FORMAT = 16
ASCII_RUN = re.compile(rf"[!-~]{{{LONGEST_FORMAT},}}")

# The letters of the scripts written without spaces between words (a value ends at one:
# "token是ERC1155标准").
UNSPACED_CHARS = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
                  "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff")

# How the text is read (`as_read`). Format characters (Cf: zero-width spaces and joiners,
# bidirectional marks, soft hyphens, tags, ...) and variation selectors are dropped, other
# decimal digits read as ASCII. Planes 0, 1 and 14 hold every format character and decimal digit
# (2 and 3 are ideographs, 15 and 16 private use): scanning only them keeps the import quick.
def _read_as_table() -> dict[int, str | None]:
    variation_selectors = {*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}
    table: dict[int, str | None] = {}
    for code in (*range(0x80, 0x20000), *range(0xE0000, 0xF0000)):
        if code in variation_selectors or unicodedata.category(chr(code)) == "Cf":
            table[code] = None
        elif (digit := unicodedata.decimal(chr(code), None)) is not None:
            table[code] = str(digit)
    return table


_READ_AS = _read_as_table()


def _char_class(codes: list[int]) -> str:
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high > low else "") for low, high in ranges)


# Most text holds none of these: found first in one pass in C, translated only then. The engine
# tests a class of the first plane alone against a bitmap, so the others get their own.
_TO_READ_AS = (re.compile(f"[{_char_class([code for code in _READ_AS if code <= 0xFFFF])}]"),
               re.compile(f"[{_char_class([code for code in _READ_AS if code > 0xFFFF])}]"))
# Scripts written without spaces between words: a token written against them ("トークンはghp_...だよ")
# ends at a letter that a pattern's \b or (?!\w) reads as part of the word. Only an ASCII run as
# long as the shortest format is set apart: it is found in C, and it is rare.
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}\U00020000-\U0003134f]")


def as_read(text: str) -> str:
    """The text the rules read: compatibility forms folded (NFKC: fullwidth letters, ...),
    invisible characters dropped, digits read as ASCII, and ASCII set apart from a script
    written without spaces, so that none of these hides a token."""
    if text.isascii():
        return text
    if _TO_READ_AS[0].search(text) is not None or (max(text) > "\uffff" and _TO_READ_AS[1].search(text) is not None):
        text = text.translate(_READ_AS)
    text = unicodedata.normalize("NFKC", text)
    parts, at = [], 0
    for run in ASCII_RUN.finditer(text):
        start, end = run.span()
        parts.append(text[at:start])
        parts.append(" " if start and _UNSPACED.match(text, start - 1) else "")
        parts.append(run.group())
        parts.append(" " if _UNSPACED.match(text, end) else "")
        at = end
    if not parts:
        return text
    parts.append(text[at:])
    return "".join(parts)


def has_long_ascii_run(text: str) -> bool:
    # Splitting is the quicker test on ASCII text; other text may have long runs of its own letters.
    if max(map(len, text.split()), default=0) < LONGEST_FORMAT:
        return False
    return text.isascii() or ASCII_RUN.search(text) is not None
