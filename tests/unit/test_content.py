"""Placeholder sanitizing, JavaScript trimming, `{user}` substitution and UTF-16 length, as TomoriBot's."""

from __future__ import annotations

import pytest

from worker.domain.content import js_trim, replace_user_placeholder, sanitize, utf16_length


# TomoriBot's sanitizeUnknownTemplatePlaceholders (src/utils/text/processors/mentionProcessor.ts,
# palinalif/TomoriBot@6f5e0070): a double-brace pass, then a single-brace pass, keeping
# user, user_formatted, user_term, bot and char in any case. The content is trimmed before.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{{user}} likes tea", "{{user}} likes tea"),
        ("{user} likes tea", "{user} likes tea"),
        ("{User} likes {BOT}", "{User} likes {BOT}"),
        ("{{char}} and {{Char}}", "{{char}} and {{Char}}"),
        ("{bot} greets {{bot}}", "{bot} greets {{bot}}"),
        ("{user_formatted} and {{User_Term}}", "{user_formatted} and {{User_Term}}"),
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
        # Odd brace runs get the regexes' plain left-to-right treatment, as in JavaScript.
        ("{{{name}}} stays", "name stays"),
        ("{{name} stays", "{name stays"),
        ("{name}} stays", "name} stays"),
        ("{{{user}}} stays", "{{{user}}} stays"),
        ("{a{b}c}", "{abc}"),
        ("{{name}}} stays", "name} stays"),
        ("unclosed {name", "unclosed {name"),
        ("closed name}", "closed name}"),
        ("no braces at all", "no braces at all"),
        ("", ""),
    ],
)
def test_sanitize(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected


def test_sanitize_keeps_whitespace_and_other_text() -> None:
    assert sanitize(" a  {b}\n\nc ") == " a  b\n\nc "


@pytest.mark.parametrize(("raw", "expected"), [
    ("  padded  \n", "padded"),
    ("\ufeff\u3000x\u2028", "x"),  # JavaScript trims these
    ("\x1cx\x85", "\x1cx\x85"),  # and not these, which Python's str.strip() would take
])
def test_js_trim(raw: str, expected: str) -> None:
    assert js_trim(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # memoryTool.ts: `content.replaceAll("{user}", name)`: the exact lower-case token only.
        ("{user} likes tea", "Alice likes tea"),
        ("{{user}} and {User} and {USER}", "{Alice} and {User} and {USER}"),
        ("{user}{user}", "AliceAlice"),
        ("{bot} likes {char}", "{bot} likes {char}"),
        ("{users} {{{user}}}", "{users} {{Alice}}"),
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
