"""Reading a command as JavaScript's JSON.parse reads it, where msgspec alone refuses the
whole document for one value a bot cannot help writing.

A bot (TomoriBot: TypeScript) builds its commands with JSON.stringify, and the model's tool
arguments are whatever the provider's JSON held. Three things JSON allows, or JSON.stringify
writes, that msgspec refuses outright, so that neither the command nor its reply subject
could be read and the bot heard nothing:

- a lone UTF-16 surrogate escape (`"\\ud800"`): JSON.stringify writes one for a string cut
  in the middle of a pair (`slice`). It is read as U+FFFD, the character TomoriBot's
  PostgreSQL driver stores in its place (node's UTF-8 encoding replaces it so);
- a number beyond a double (`1e400`, `-1e400`): JSON.parse gives +-Infinity; read so in the
  untyped fields (the model's `tool_args`), refused with the field's path in typed ones;
- an integer of more than 4,300 digits (Python's int-from-text limit): JSON.parse gives
  +-Infinity too, and so does the worker (it is read as a number beyond a double).

The strict decoder runs first; only a document it refuses is read again this way, so a
valid command pays nothing. The rewrite keeps the document's length and changes no byte
outside the values it replaces, so an error's byte offset still points into what was sent.
"""

from __future__ import annotations

import re
from typing import Generic, TypeVar

import msgspec

__all__ = ["CommandDecoder", "as_javascript_reads"]

T = TypeVar("T")

# A JSON string (its escapes included), or an integer too long for Python's int(), outside
# any string: the lookarounds keep a fraction's or an exponent's digits out.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(?<![0-9.eE+\-])(-?)[1-9]([0-9]{4300,})(?![0-9.eE])', re.DOTALL)
# One escape of a string: a valid surrogate pair (kept), a lone surrogate (group 1), or any
# other escape, `\\` included, so that the text after an escaped backslash is never read as one.
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)",
                     re.DOTALL)
_REPLACEMENT = rb"\ufffd"  # as long as the escape it replaces


def _escape(match: re.Match[bytes]) -> bytes:
    return _REPLACEMENT if match.group(1) else match.group(0)


def _token(match: re.Match[bytes]) -> bytes:
    if match.group(2) is None:  # a string
        text = match.group(0)
        return _ESCAPE.sub(_escape, text) if b"\\u" in text else text
    # The same number of bytes, read as a number far beyond a double: +-Infinity.
    return match.group(1) + b"1e" + b"9" * (len(match.group(2)) - 1)


def as_javascript_reads(data: bytes) -> bytes:
    """The document with each lone surrogate escape written `\\ufffd` and each integer of more
    than 4,300 digits written as a float literal beyond a double; every other byte kept."""
    return _TOKEN.sub(_token, data)


class CommandDecoder(Generic[T]):
    """A msgspec decoder of one command type that reads what JSON.parse would (module doc)."""

    def __init__(self, type: type[T]) -> None:
        self.type = type
        self._strict: msgspec.json.Decoder[T] = msgspec.json.Decoder(type)
        # float() reads a literal beyond a double as +-inf, as JSON.parse does, where msgspec
        # refuses it; only untyped values (Any) go through the hook.
        self._lenient: msgspec.json.Decoder[T] = msgspec.json.Decoder(type, float_hook=float)

    def decode(self, data: bytes) -> T:
        """The command; raises msgspec's DecodeError or ValidationError (or RecursionError for
        deep nesting) for a document JSON.parse would not read as this type either."""
        try:
            return self._strict.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return self._lenient.decode(as_javascript_reads(data))
