"""Tag parsing as the panels do it: split, trim, unquote, drop, de-duplicate, keep five."""

from __future__ import annotations

import pytest

from worker.domain.tags import MAX_TAG_LENGTH, MAX_TAGS, parse_tags


@pytest.mark.parametrize("raw", [None, "", [], [""], " , ,, ", ["", " "], ["#", "# "], "''", '""'])
def test_nothing_usable_gives_no_tags(raw: str | list[str] | None) -> None:
    assert parse_tags(raw) == ()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("tea", ("tea",)),
        ("tea,coffee", ("tea", "coffee")),
        ("  tea ,  coffee  ", ("tea", "coffee")),
        ("tea,,coffee,", ("tea", "coffee")),
        ("green tea, black tea", ("green tea", "black tea")),
        (["tea", "coffee"], ("tea", "coffee")),
        (["tea, coffee", "juice"], ("tea", "coffee", "juice")),
        ([" tea ", "", "coffee"], ("tea", "coffee")),
    ],
)
def test_split_on_commas_and_trim(raw: str | list[str], expected: tuple[str, ...]) -> None:
    assert parse_tags(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"tea"', "tea"),
        ("'tea'", "tea"),
        ("\u2018tea\u2019", "tea"),
        ("\u201ctea\u201d", "tea"),
        ('"tea', "tea"),
        ("tea'", "tea"),
        ("\"'tea'\"", "tea"),
        ("\" 'tea' \"", "tea"),
        (" \u201c \u2018 green tea \u2019 \u201d ", "green tea"),
        ("'#general'", "#general"),
        ("don't", "don't"),
    ],
)
def test_surrounding_quotes_are_stripped_repeatedly(raw: str, expected: str) -> None:
    assert parse_tags(raw) == (expected,)


def test_quotes_are_stripped_before_the_empty_check() -> None:
    assert parse_tags("tea, ' ', \u201c\u201d, coffee") == ("tea", "coffee")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("#general", ("#general",)),
        ("tea, #general, #Random", ("tea", "#general", "#Random")),
        ("#", ()),
        (" # ", ()),
        ("'#'", ()),
        ("#, tea", ("tea",)),
        ("##x", ("##x",)),
    ],
)
def test_channel_tags_keep_their_hash(raw: str, expected: tuple[str, ...]) -> None:
    assert parse_tags(raw) == expected


@pytest.mark.parametrize(
    ("tag", "kept"),
    [
        ("a" * MAX_TAG_LENGTH, True),
        ("a" * (MAX_TAG_LENGTH + 1), False),
        ("#" + "a" * (MAX_TAG_LENGTH - 1), True),
        ("#" + "a" * MAX_TAG_LENGTH, False),
        ("'" + "a" * MAX_TAG_LENGTH + "'", True),  # the quotes do not count
        ("a" * (MAX_TAG_LENGTH - 2) + "😀", True),  # an emoji counts 2, as in JavaScript
        ("a" * (MAX_TAG_LENGTH - 1) + "😀", False),
    ],
)
def test_length_limit(tag: str, kept: bool) -> None:
    assert parse_tags(f"{tag}, next") == ((tag.strip("'"), "next") if kept else ("next",))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("tea, Tea, TEA", ("tea",)),
        ("Tea, tea", ("Tea",)),
        ("#General, #general", ("#General",)),
        ("general, #general", ("general", "#general")),  # a channel is not the word
        ("'tea', tea", ("tea",)),
        ("Straße, STRASSE", ("Straße",)),  # casefold, not just lower
        (["tea", "TEA, coffee"], ("tea", "coffee")),
    ],
)
def test_duplicates_are_dropped_case_insensitively_keeping_the_first(
    raw: str | list[str], expected: tuple[str, ...]
) -> None:
    assert parse_tags(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b,c,d,e,f,g", ("a", "b", "c", "d", "e")),
        (["a", "b", "c", "d", "e", "f"], ("a", "b", "c", "d", "e")),
        ("a, A, b, c, d, e, f", ("a", "b", "c", "d", "e")),  # duplicates do not use up a place
        ("a, , b, " + "x" * 40 + ", c, d, e", ("a", "b", "c", "d", "e")),  # nor dropped ones
        ("a,b,c", ("a", "b", "c")),
    ],
)
def test_at_most_five_after_dropping(raw: str | list[str], expected: tuple[str, ...]) -> None:
    assert MAX_TAGS == 5
    assert parse_tags(raw) == expected


def test_order_is_kept() -> None:
    assert parse_tags("zeta, alpha, #mid") == ("zeta", "alpha", "#mid")
