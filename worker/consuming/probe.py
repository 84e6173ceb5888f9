"""What can be read of a command that could not be decoded or handled: its id and where to
answer. The handler (poison), the stranded sweep and the result lookup read it the same way."""

from __future__ import annotations

import re

import msgspec

from contracts.envelope import PROBE_DECODER, ReplyProbe
from contracts.subjects import may_answer

# A JSON string (escapes and all), or a bracket outside every string.
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def probe(data: bytes | None) -> ReplyProbe | None:
    """The command's readable top-level fields, or None when it is not a JSON object."""
    try:
        return PROBE_DECODER.decode(data or b"")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    except RecursionError:
        # Nesting too deep for the decoder, in any member: what the probe reads is at the top.
        try:
            return PROBE_DECODER.decode(_top_level_only(data or b""))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None


def _top_level_only(data: bytes) -> bytes:
    """The document with every array or object inside a top-level member written null."""
    pieces: list[bytes] = []
    depth = kept = opened = 0
    for token in _STRUCTURE.finditer(data):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            depth += 1
            if depth == 2:
                opened = token.start()
        elif bracket in (b"]", b"}"):
            if depth == 2:
                pieces += [data[kept:opened], b"null"]
                kept = token.end()
            depth -= 1
    return b"".join([*pieces, data[kept:]])


def _fields(data: bytes | None) -> tuple[str | None, str | None]:
    """(command id, reply subject exactly as written), each None when absent or not a string."""
    found = probe(data)
    if found is None:
        return None, None
    command_id = found.command_id if isinstance(found.command_id, str) and found.command_id else None
    return command_id, found.reply_to if isinstance(found.reply_to, str) else None


def command_id_of(data: bytes | None) -> str | None:
    return _fields(data)[0]


def reply_to_of(data: bytes | None) -> str | None:
    """The reply subject exactly as written, allowed or not (the lookup says which)."""
    return _fields(data)[1]


def answerable(data: bytes | None, reply_prefixes: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The command id and the reply subject the worker may answer on (a valid subject under one
    of the allowed prefixes), each None when there is none."""
    command_id, reply_to = _fields(data)
    if reply_to is not None and not may_answer(reply_to, reply_prefixes):
        reply_to = None
    return command_id, reply_to
