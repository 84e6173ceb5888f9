"""What can be read of a command that could not be decoded or handled: its id and where to
answer. The handler (poison), the stranded sweep and the result lookup read it the same way."""

from __future__ import annotations

import msgspec

from contracts.commands import PROBE_DECODER, is_reply_subject


def probe(data: bytes | None):
    """The command's readable top-level fields, or None when it is not a JSON object."""
    try:
        return PROBE_DECODER.decode(data or b"")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def command_id_of(data: bytes | None) -> str | None:
    found = probe(data)
    return found.command_id if found is not None and isinstance(found.command_id, str) and found.command_id else None


def reply_to_of(data: bytes | None) -> str | None:
    """The reply subject exactly as written, allowed or not (the lookup says which)."""
    found = probe(data)
    return found.reply_to if found is not None and isinstance(found.reply_to, str) else None


def answerable(data: bytes | None, reply_prefixes: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The command id and the reply subject the worker may answer on (a valid subject under one
    of the allowed prefixes), each None when there is none."""
    reply_to = reply_to_of(data)
    if not (reply_to is not None and is_reply_subject(reply_to) and reply_to.startswith(reply_prefixes)):
        reply_to = None
    return command_id_of(data), reply_to
