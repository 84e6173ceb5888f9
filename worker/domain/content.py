"""Memory text rules shared by the save paths, as TomoriBot applies them: JavaScript's trim and
whitespace, placeholder sanitizing, JavaScript length, a bridge user's `{user}`.

The bot renders `{user}`, `{user_formatted}`, `{user_term}`, `{bot}` and `{char}` (any case,
single or double braces) when it shows a memory; any other brace token a model writes would be
shown literally, so it is reduced to its bare word (TomoriBot's
`sanitizeUnknownTemplatePlaceholders`, src/utils/text/processors/mentionProcessor.ts, in its
persona-naming-era form). Length is counted in UTF-16 code units because the limits are
TomoriBot's, which counts with JavaScript's `length`.
"""

from __future__ import annotations

import re

__all__ = [
    "KEPT_PLACEHOLDERS",
    "js_trim",
    "replace_user_placeholder",
    "sanitize",
    "utf16_length",
]

KEPT_PLACEHOLDERS = frozenset({"user", "user_formatted", "user_term", "bot", "char"})

# JavaScript's white space and line terminators: what String.prototype.trim() removes and `\s`
# matches (Python's str.strip() differs: it strips U+001C..U+001F and U+0085, and keeps U+FEFF).
JS_WHITESPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                 "\u2028\u2029\u202f\u205f\u3000\ufeff")
JS_SPACE_RUN = re.compile(f"[{JS_WHITESPACE}]+")

# Two passes, as TomoriBot runs them: double-brace tokens first, then single-brace ones.
_DOUBLE = re.compile(r"\{\{([a-zA-Z][a-zA-Z0-9_]*)\}\}")
_SINGLE = re.compile(r"\{([a-zA-Z][a-zA-Z0-9_]*)\}")


def js_trim(text: str) -> str:
    """JavaScript's `text.trim()`."""
    return text.strip(JS_WHITESPACE)


def sanitize(text: str) -> str:
    """Keep the bot's own placeholders and reduce every other brace token to its word (no trim:
    TomoriBot trims the content before). Each pass is a plain left-to-right regex replacement,
    so odd brace runs get its natural treatment: `{{{x}}}` becomes `x`, `{{x}}}` becomes `x}`."""
    if "{" not in text:
        return text
    text = _DOUBLE.sub(lambda m: m.group(0) if m.group(1).lower() in KEPT_PLACEHOLDERS else m.group(1), text)
    return _SINGLE.sub(lambda m: m.group(0) if m.group(1).lower() in KEPT_PLACEHOLDERS else m.group(1), text)


def utf16_length(text: str) -> int:
    """What JavaScript's `String.prototype.length` returns for `text`."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (possible in JSON input) counts one unit, as in JavaScript.
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def replace_user_placeholder(text: str, name: str) -> str:
    """Put `name` wherever the content says exactly `{user}` (TomoriBot: `replaceAll("{user}", name)`;
    `{{user}}` then reads `{name}`, and `{User}` is left alone).

    Needed when a memory about someone is stored server-wide (a Matrix bridge user has no
    user row): there, `{user}` would later be rendered as whoever happens to be talking.
    """
    return text.replace("{user}", name)
