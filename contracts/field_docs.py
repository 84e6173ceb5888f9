"""Field descriptions of the contract, read from the Structs' own docstrings.

Each payload type documents its fields in an `Attributes:` section of its class docstring
(the Google style that Sphinx's napoleon and IDEs read)::

    class Channel(Struct):
        \"\"\"Where the tool call happened.

        Attributes:
            id: The channel's Discord id.
            is_dm: True in a direct message; continuation lines are
                indented further.
        \"\"\"

The text before `Attributes:` describes the type itself. `contracts/schema.py` puts both into
the JSON Schemas (and from there into the TypeScript declarations' JSDoc), so a field's
explanation lives in one place, next to the type it explains. The docstrings rather than
`Annotated[..., Meta(description=...)]` keep each field's line its type alone: the Structs stay
readable, and a change of a field's type never touches its documentation.

A subclass inherits the entries of its bases and may override one by naming it again.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

_HEADING = "Attributes:"
_ENTRY = re.compile(r"^ {4}(?P<name>[A-Za-z_][A-Za-z0-9_]*): (?P<text>\S.*)$")
_CONTINUATION = re.compile(r"^ {8}\S")


@dataclass(frozen=True, slots=True)
class TypeDoc:
    summary: str | None
    fields: dict[str, str]


def parse(cls: type) -> TypeDoc:
    """The summary and the `Attributes:` entries of `cls`'s own docstring (not its bases')."""
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return TypeDoc(None, {})
    lines = inspect.cleandoc(doc).splitlines()
    if _HEADING not in lines:
        return TypeDoc("\n".join(lines).strip() or None, {})
    at = lines.index(_HEADING)
    summary = "\n".join(lines[:at]).strip() or None
    fields: dict[str, str] = {}
    current: str | None = None
    for line in lines[at + 1:]:
        if not line.strip():
            current = None
            continue
        entry = _ENTRY.match(line)
        if entry:
            current = entry["name"]
            if current in fields:
                raise ValueError(f"{cls.__name__}: attribute {current!r} is documented twice")
            fields[current] = entry["text"].strip()
        elif current is not None and _CONTINUATION.match(line):
            fields[current] += " " + line.strip()
        else:
            raise ValueError(
                f"{cls.__name__}: cannot read this line of the Attributes section "
                f"(want '    name: text', continued with 8 spaces): {line!r}")
    return TypeDoc(summary, fields)


def field_docs(cls: type) -> dict[str, str]:
    """Every documented field of `cls`, its own entries overriding those of its bases."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update(parse(klass).fields)
    return out


def summary(cls: type) -> str | None:
    return parse(cls).summary
