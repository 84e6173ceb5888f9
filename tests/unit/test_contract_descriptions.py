"""The contract explains every field: each property of every schema has a description, taken from
its Struct's docstring (contracts/field_docs.py), and the TypeScript declarations carry each one
as the property's JSDoc, so a bot author reads the same text in the schema and in the editor."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from contracts import field_docs, schema

DECLARATIONS = Path(schema.__file__).parent / "types" / "index.d.ts"


def _defs() -> list[tuple[str, str, dict]]:
    """(schema file, type name, type schema) of every payload type of every schema."""
    return [(name, type_name, body)
            for name, bundle in sorted(schema.schemas().items())
            for type_name, body in sorted(bundle["$defs"].items())]


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def test_every_property_of_every_schema_has_a_description():
    missing = [f"{name}: {type_name}.{prop}"
               for name, type_name, body in _defs()
               for prop, prop_schema in body.get("properties", {}).items()
               if not _text(prop_schema.get("description"))]
    assert missing == [], ("add these fields to the Attributes section of their Struct's docstring, "
                           f"then run `make schemas`: {sorted(set(missing))}")


def test_every_payload_type_has_a_description():
    missing = sorted({type_name for _, type_name, body in _defs() if not _text(body.get("description"))})
    assert missing == []


def test_a_described_property_keeps_its_schema():
    # The description sits beside the reference; the reference itself is untouched.
    create = schema.schemas()["memory.create"]["$defs"]["CreateMemory"]["properties"]
    assert create["persona"] == {"$ref": "#/$defs/Persona", "description": create["persona"]["description"]}
    assert "conversation" in create["participants"]["description"]  # the docstring's words, not a stub
    assert create["channel"]["description"].startswith("Where the tool call happened")


def _jsdoc_by_property(declarations: str) -> dict[tuple[str, str], str]:
    """(type, property) -> the JSDoc text above the property, without its @tags."""
    out: dict[tuple[str, str], str] = {}
    # `export type CommandOutcome = CommandOutcome1;`: the generator's name for a type with rules.
    aliases = {target: name for name, target in re.findall(r"^export type (\w+) = (\w+);$", declarations, re.M)}
    for interface in re.finditer(r"^export interface (\w+) \{\n(.*?)^\}", declarations, re.M | re.S):
        doc: list[str] | None = None
        for line in interface[2].splitlines():
            stripped = line.strip()
            if stripped == "/**":
                doc = []
            elif stripped == "*/":
                pass
            elif doc is not None and stripped.startswith("*"):
                doc.append(stripped.lstrip("*").strip())
            elif prop := re.match(r"^  (\w+)\??:", line):
                text = " ".join(part for part in (doc or []) if not part.startswith("@"))
                out[(aliases.get(interface[1], interface[1]), prop[1])] = " ".join(text.split())
                doc = None
    return out


def test_the_typescript_declarations_carry_every_description_as_jsdoc():
    jsdoc = _jsdoc_by_property(DECLARATIONS.read_text())
    wrong = []
    for _, type_name, body in _defs():
        for prop, prop_schema in body.get("properties", {}).items():
            want = " ".join(str(prop_schema.get("description", "")).split())
            if jsdoc.get((type_name, prop)) != want:
                wrong.append(f"{type_name}.{prop}")
    assert wrong == [], f"run `make schemas`: these properties lack their description as JSDoc: {sorted(set(wrong))}"


class _Base(msgspec.Struct):
    """A base.

    Attributes:
        a: The base's a.
        b: The base's b, on two
            lines.
    """

    a: int
    b: int


class _Child(_Base):
    """A child.

    Attributes:
        b: The child's own b.
    """


def test_docstrings_are_read_with_continuations_and_inherited_entries():
    assert field_docs.summary(_Child) == "A child."
    assert field_docs.field_docs(_Base) == {"a": "The base's a.", "b": "The base's b, on two lines."}
    assert field_docs.field_docs(_Child) == {"a": "The base's a.", "b": "The child's own b."}


def test_a_docstring_line_that_is_no_entry_is_refused_with_the_type_named():
    class Broken(msgspec.Struct):
        """Broken.

        Attributes:
            a: Fine.
          b: indented wrongly.
        """

        a: int

    with pytest.raises(ValueError, match="Broken: cannot read"):
        field_docs.parse(Broken)


def test_describing_a_field_a_type_does_not_have_fails_the_generation(monkeypatch):
    class Stale(msgspec.Struct):
        """Stale.

        Attributes:
            gone: A field that was renamed.
        """

        kept: int

    monkeypatch.setitem(schema.PAYLOAD_TYPES, "Stale", Stale)
    with pytest.raises(ValueError, match="Stale's docstring describes fields it does not have: gone"):
        schema._bundle("stale", [Stale])
