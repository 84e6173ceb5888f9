"""A command is read as JavaScript's JSON.parse reads it (contracts/decoding.py): a lone
surrogate escape is U+FFFD, a number beyond a double (or an integer too long for Python's
int) is +-Infinity; everything else is read exactly as msgspec reads it, byte for byte."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.decoding import CommandDecoder, as_javascript_reads

ANY = CommandDecoder(Any)
LONGEST_INT = 4300  # sys.get_int_max_str_digits(): the most digits Python reads as an int


def as_javascript_string(python: str) -> str:
    """A Python string as a JavaScript string holds it (UTF-16: adjacent surrogates pair up),
    with each lone surrogate replaced by U+FFFD, as node's UTF-8 encoding replaces it."""
    return python.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@pytest.mark.parametrize(("json_text", "read"), [
    (rb'"\ud800"', "\ufffd"),
    (rb'"\uDBFF"', "\ufffd"),
    (rb'"a\udc00b"', "a\ufffdb"),
    (rb'"\ud83d"', "\ufffd"),  # a pair cut by `slice` after its high half
    (rb'"\ude00\ud83d"', "\ufffd\ufffd"),  # the halves in the wrong order
    (rb'"\ud800\ud83d\ude00\ude00"', "\ufffd\U0001f600\ufffd"),
    (rb'"\ud800\u0041"', "\ufffdA"),
    (rb'"\\\ud800"', "\\\ufffd"),  # an escaped backslash, then a lone surrogate
    (rb'{"\ud800": ["\udfff"]}', {"\ufffd": ["\ufffd"]}),  # keys too
])
def test_a_lone_surrogate_escape_is_read_as_the_replacement_character(json_text, read):
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(json_text)
    assert ANY.decode(json_text) == read


@pytest.mark.parametrize("json_text", [
    rb'"\ud83d\ude00"', rb'"\uD83D\uDE00"',  # a valid pair, in either case
    rb'"\\ud800"', rb'"\\\\ud800"',  # an escaped backslash and the text "ud800"
    rb'"\u0041\u00e9\ufffd"', rb'"ud800"', rb'["\\", "\ud83d\ude00"]',
])
def test_what_msgspec_reads_is_left_as_it_is(json_text):
    assert as_javascript_reads(json_text) == json_text
    assert ANY.decode(json_text) == msgspec.json.decode(json_text)


@pytest.mark.parametrize(("json_text", "read"), [
    (b"1e400", math.inf), (b"-1e400", -math.inf), (b"1E+400", math.inf), (b"1.5e309", math.inf),
    (b"1" + b"0" * LONGEST_INT, math.inf), (b"-" + b"9" * 5000, -math.inf),
    (b'{"a": [1' + b"0" * 5000 + b"]}", {"a": [math.inf]}),
])
def test_a_number_beyond_a_double_is_infinity(json_text, read):
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(json_text)
    assert ANY.decode(json_text) == read


@pytest.mark.parametrize("json_text", [
    b"9" * LONGEST_INT, b"-" + b"9" * LONGEST_INT, b"123456789012345678901234567890",
    b"1." + b"5" * 5000, b"0." + b"0" * 5000 + b"1", b"1e" + b"0" * 5000,  # long, but not a long integer
    b'"' + b"1" * 5000 + b'"',  # digits in a string
])
def test_long_numbers_msgspec_reads_and_digits_in_strings_are_left_as_they_are(json_text):
    assert as_javascript_reads(json_text) == json_text


def test_a_typed_field_still_refuses_a_number_beyond_its_range_naming_it():
    class Typed(msgspec.Struct):
        n: int = 0
        x: Any = None

    decoder = CommandDecoder(Typed)
    for number in (b"1e400", b"1" + b"0" * 5000):
        with pytest.raises(msgspec.ValidationError, match=r"out of range - at `\$\.n`"):
            decoder.decode(b'{"x": "\\ud800", "n": ' + number + b"}")
    assert decoder.decode(b'{"x": [1e400, "\\ud800"]}') == Typed(x=[math.inf, "\ufffd"])


# --- properties ---------------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None)
# Text as JSON.stringify writes it (ensure_ascii: every surrogate, paired or lone, escaped).
texts = st.text(st.characters() | st.characters(categories=["Cs"]), max_size=30)
values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
                      max_leaves=12)


def javascript_value(value: Any) -> Any:
    if isinstance(value, str):
        return as_javascript_string(value)
    if isinstance(value, list):
        return [javascript_value(v) for v in value]
    if isinstance(value, dict):
        return {as_javascript_string(k): javascript_value(v) for k, v in value.items()}
    return value


@FUZZ
@given(value=values)
def test_any_document_is_read_as_javascript_reads_it(value):
    """JSON text of any value (lone surrogates and infinities included) decodes to what a
    JavaScript string and number would hold, with U+FFFD for each lone surrogate."""
    text = json.dumps(value).replace("Infinity", "1e400").encode()
    assert ANY.decode(text) == javascript_value(json.loads(text))


# Pieces of a JSON string's text: escapes a rewrite must keep apart.
pieces = st.lists(st.sampled_from([
    "a", "\u00e9", "\U0001f600", "1" * 5, r"\\", r"\\\\", r"\"", r"\u0041", r"\ud83d\ude00", r"\ud800", r"\uDFFF",
    r"\udbff", "ud800", r"\n", r"\/",
]), max_size=12).map("".join)


@FUZZ
@given(strings=st.lists(pieces, min_size=1, max_size=4), numbers=st.lists(st.integers(1, 6000), max_size=3))
def test_the_rewrite_changes_nothing_but_lone_surrogates_and_long_integers(strings, numbers):
    digits = ["9" * n for n in numbers]
    text = ("[" + ",".join([f'"{s}"' for s in strings] + digits) + "]").encode()
    out = as_javascript_reads(text)

    assert len(out) == len(text)
    changed = [i for i, (a, b) in enumerate(zip(text, out, strict=True)) if a != b]
    for i in changed:
        escape = out.rfind(b"\\u", max(0, i - 5), i + 1)
        in_long_integer = any(m.start() <= i < m.end() for m in re.finditer(rb"[0-9e]{4301,}", out))
        assert in_long_integer or (escape >= 0 and out[escape:escape + 6] == b"\\ufffd"
                                   and text[escape:escape + 3].lower() == b"\\ud"), (i, text[i - 6:i + 6])
    assert ANY.decode(text) == [as_javascript_string(json.loads(f'"{s}"')) for s in strings] + [
        int(d) if len(d) <= LONGEST_INT else math.inf for d in digits]
