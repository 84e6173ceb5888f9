"""What can be read of a command that could not be decoded or handled: its id and where to
answer. The handler (poison), the stranded sweep and the result lookup read it the same way."""

from __future__ import annotations

import msgspec

from contracts.commands import PROBE_DECODER, ReplyProbe
from contracts.subjects import may_answer


def probe(data: bytes | None) -> ReplyProbe | None:
    """The command's readable top-level fields, or None when it is not a JSON object."""
    try:
        return PROBE_DECODER.decode(data or b"")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


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
