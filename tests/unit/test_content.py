"""Placeholder sanitizing, `{user}` substitution and UTF-16 length."""

from __future__ import annotations

import pytest

from worker.domain.content import replace_user_placeholder, sanitize, utf16_length


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{{user}} likes tea", "{{user}} likes tea"),
        ("{user} likes tea", "{user} likes tea"),
        ("{User} likes {BOT}", "{User} likes {BOT}"),
        ("{{char}} and {{Char}}", "{{char}} and {{Char}}"),
        ("{bot} greets {{bot}}", "{bot} greets {{bot}}"),
        ("{name} likes tea", "name likes tea"),
        ("{{first_name}} likes tea", "first_name likes tea"),
        ("{Name2} and {{x_1}}", "Name2 and x_1"),
        ("{a}{b}", "ab"),
        ("{{a}}{{b}}", "ab"),
        ("{users} is not {user}", "users is not {user}"),
        ("{1abc} stays", "{1abc} stays"),
        ("{_x} stays", "{_x} stays"),
        ("{a-b} stays", "{a-b} stays"),
        ("{ name } stays", "{ name } stays"),
        ("{} stays", "{} stays"),
        ("{café} stays", "{café} stays"),
        ("{{{name}}} stays", "{{{name}}} stays"),
        ("{{name} stays", "{{name} stays"),
        ("{name}} stays", "{name}} stays"),
        ("{{{user}}} stays", "{{{user}}} stays"),
        # Only the braces touching a word decide: this inner token is well formed.
        ("{a{b}c}", "{abc}"),
        ("{{name}}} stays", "{{name}}} stays"),
        ("unclosed {name", "unclosed {name"),
        ("closed name}", "closed name}"),
        ("  padded {x}  \n", "padded x"),
        ("\t{user}\t", "{user}"),
        ("no braces at all", "no braces at all"),
        ("   ", ""),
        ("", ""),
    ],
)
def test_sanitize(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected


def test_sanitize_keeps_inner_whitespace_and_other_text() -> None:
    assert sanitize(" a  {b}\n\nc ") == "a  b\n\nc"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{user} likes tea", "Alice likes tea"),
        ("{{user}} and {User} and {USER}", "Alice and Alice and Alice"),
        ("{user}{user}", "AliceAlice"),
        ("{bot} likes {char}", "{bot} likes {char}"),
        ("{users} {{{user}}}", "{users} {{{user}}}"),
        ("no placeholder", "no placeholder"),
    ],
)
def test_replace_user_placeholder(raw: str, expected: str) -> None:
    assert replace_user_placeholder(raw, "Alice") == expected


def test_replace_user_placeholder_inserts_name_literally() -> None:
    assert replace_user_placeholder("{user}", r"a\1\g<0>") == r"a\1\g<0>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("é", 1),
        ("日本", 2),
        ("😀", 2),
        ("a😀b", 4),
        ("👍🏽", 4),
        ("\U00010000", 2),
        ("\uffff", 1),
        ("\ud83d", 1),
    ],
)
def test_utf16_length(text: str, expected: int) -> None:
    assert utf16_length(text) == expected


@pytest.mark.parametrize(("prefix", "expected"), [(998, 1000), (999, 1001)])
def test_utf16_length_at_limit_boundary(prefix: int, expected: int) -> None:
    assert utf16_length("a" * prefix + "😀") == expected
