"""What memoryctl prints of a bot's, a model's or a chat user's text: every character a terminal
would obey shown as an escape instead, table cells of bounded width, JSON that escapes the same
characters and still reads back as the same value."""

from __future__ import annotations

import json

import pytest

from worker.cli import terminal

# Each one does something to a terminal or to what the operator reads when printed raw.
HOSTILE = {
    "\x1b": "\\x1b",  # ESC: CSI and OSC sequences (clear the screen, retitle, OSC 52 clipboard)
    "\x07": "\\x07",  # BEL: ends an OSC sequence
    "\r": "\\x0d",  # overwrites the line printed so far
    "\x7f": "\\x7f",  # DEL
    "\x9b": "\\x9b",  # C1 CSI: the same as ESC [ on terminals that take 8-bit controls
    "\x9d": "\\x9d",  # C1 OSC
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE: reorders what follows
    "\u2066": "\\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u200b": "\\u200b",  # ZERO WIDTH SPACE: hides where text splits
    "\u2028": "\\u2028",  # LINE SEPARATOR
    "\U000e0041": "\\U000e0041",  # TAG LATIN CAPITAL LETTER A: invisible text
}


@pytest.mark.parametrize("raw, shown", HOSTILE.items(), ids=[f"U+{ord(c):04X}" for c in HOSTILE])
def test_each_control_or_format_character_is_shown_as_an_escape(raw, shown):
    assert terminal.visible(f"a{raw}b") == f"a{shown}b"
    assert terminal.cell(f"a{raw}b", 40) == f"a{shown}b"


def test_an_osc_52_clipboard_write_reaches_the_terminal_as_plain_text():
    text = "\x1b]52;c;Y3VybCBldmlsLnNo\x07 hi \x1b[2J"
    assert terminal.visible(text) == "\\x1b]52;c;Y3VybCBldmlsLnNo\\x07 hi \\x1b[2J"


def test_ordinary_text_of_any_language_is_left_as_it_is():
    for text in ("Mika prefers green tea", "ミカは緑茶が好き", "Ünïcödé, emoji 🍵", "C:\\Users\\mika"):
        assert terminal.visible(text) == text and terminal.cell(text, 60) == text


def test_a_block_keeps_its_newlines_and_a_cell_does_not():
    assert terminal.visible("one\ntwo\x1b", keep_newlines=True) == "one\ntwo\\x1b"
    assert terminal.cell("one\ntwo", 40) == "one\\x0atwo"


def test_a_long_cell_is_cut_to_its_width_with_a_visible_mark():
    cut = terminal.cell("x" * 20_000, 40)
    assert len(cut) == 40 and cut.endswith(terminal.CUT) and cut.startswith("x" * 39)
    assert terminal.cell("x" * 40, 40) == "x" * 40


def test_a_cut_never_splits_an_escape():
    cut = terminal.cell("abcdefg" + "\x1b" * 10, 12)  # the escape at 7..10 fits, the next does not
    assert cut == "abcdefg\\x1b" + terminal.CUT
    assert terminal.cell("abcdefgh\x1b", 11) == "abcdefgh" + terminal.CUT


def test_json_escapes_what_a_terminal_obeys_and_reads_back_the_same():
    value = {"status": "".join(HOSTILE) + " ミカ", "\u202efield": ["\x1b[2J", "\U000e0041"]}
    text = terminal.json_text(value)
    assert json.loads(text) == value
    assert terminal.visible(text, keep_newlines=True) == text  # nothing left to escape
    assert "ミカ" in text and "\\u202e" in text and "\\udb40\\udc41" in text


def test_plain_json_dumps_would_have_let_c1_and_bidi_through():
    """Why json_text exists: json.dumps escapes C0 but not DEL, C1 or format characters."""
    value = {"status": "\x9b2J\u202e\x7f"}
    raw = json.dumps(value, ensure_ascii=False)
    assert terminal.visible(raw) != raw
    safe = terminal.json_text(value, indent=None)
    assert terminal.visible(safe) == safe and json.loads(safe) == value
