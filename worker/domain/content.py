"""Memory text rules shared by every save path: placeholder sanitizing and JavaScript-style length.

The bot renders `{user}`, `{bot}` and `{char}` (any case, single or double braces) when it
shows a memory; any other brace token a model writes would either be rendered as a literal
template or confuse that renderer, so it is reduced to its bare word. Length is counted in
UTF-16 code units because the limits are TomoriBot's, which counts with JavaScript's `length`.
"""

from __future__ import annotations

import re

__all__ = ["KEPT_PLACEHOLDERS", "replace_user_placeholder", "sanitize", "utf16_length"]

KEPT_PLACEHOLDERS = frozenset({"user", "bot", "char"})

# A token is exactly `{word}` or `{{word}}`: a brace run of any other length next to it
# (`{{{x}}}`, `{{x}`, `{x}}`) is not a token and is left alone.
_TOKEN = re.compile(
    r"(?<!\{)(?:\{\{([A-Za-z][A-Za-z0-9_]*)\}\}|\{([A-Za-z][A-Za-z0-9_]*)\})(?!\})"
)


def _replace(match: re.Match[str]) -> str:
    word = match.group(1) or match.group(2)
    return match.group(0) if word.lower() in KEPT_PLACEHOLDERS else word


def sanitize(text: str) -> str:
    """Trim, keep the bot's own placeholders and reduce every other brace token to its word."""
    text = text.strip()
    if "{" not in text:
        return text
    return _TOKEN.sub(_replace, text)


def utf16_length(text: str) -> int:
    """What JavaScript's `String.prototype.length` returns for `text`."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (possible in JSON input) counts one unit, as in JavaScript.
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


_USER_PLACEHOLDER = re.compile(r"(?<!\{)(?:\{\{user\}\}|\{user\})(?!\})", re.IGNORECASE)


def replace_user_placeholder(text: str, name: str) -> str:
    """Put `name` where the content says `{user}` (single or double braces, any case).

    Needed when a memory about someone is stored server-wide (a Matrix bridge user has no
    user row): there, `{user}` would later be rendered as whoever happens to be talking.
    """
    if "{" not in text:
        return text
    return _USER_PLACEHOLDER.sub(lambda _: name, text)
