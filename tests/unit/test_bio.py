"""The bio seed: text normalization and the one-time decision (docs/design.md, section 8.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.kinds.seed_bio import SeedBio
from tests.support.commands import fixed_envelope, seed_bio_command
from worker.domain.content import JS_SPACE_RUN, JS_WHITESPACE, js_trim, utf16_length
from worker.domain.people import HostLink, ProxyIdentity
from worker.domain.proxy import HOST_BLACKLISTED, HOST_FULL_PRIVACY, NO_HOST
from worker.domain.workspace import Limits
from worker.kinds.seed_bio.decision import ALREADY_SEEDED, BLANK_BIO, NOT_NEW, SeedPlan, SeedSkip, decide_seed, normalize_bio

IDENTITY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
HOST = "100000000000000001"
LIMITS = Limits(max_personal_memories=10)
OPEN = ProxyIdentity(user_id=99, disc_id=IDENTITY, hosts=(HostLink(HOST),))

# --- normalize_bio ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bio", "expected"),
    [
        (None, ""),
        ("", ""),
        ("   \n\t ", ""),
        ("plain", "plain"),
        ("  padded  ", "padded"),
        ("two  spaces", "two spaces"),
        ("line\nbreak", "line break"),
        ("a\r\n\r\nb", "a b"),
        ("tab\there", "tab here"),
        ("nbsp\u00a0and\u2003em\u3000ideo", "nbsp and em ideo"),
        ("sep\u2028line\u2029para", "sep line para"),
        (" mixed \n\t\u00a0 runs ", "mixed runs"),
        ("emoji 😀  kept", "emoji 😀 kept"),
    ],
)
def test_whitespace_collapsed_and_trimmed(bio: str | None, expected: str) -> None:
    assert normalize_bio(bio, 1000) == expected


@pytest.mark.parametrize(
    ("bio", "max_units", "expected"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdef", 5, "abcde"),
        ("abcdef", 0, ""),
        ("abc😀", 5, "abc😀"),  # the emoji is 2 units and fits exactly
        ("abc😀", 4, "abc"),  # it does not fit: dropped whole, never half a pair
        ("abc😀d", 4, "abc"),
        ("😀😀😀", 5, "😀😀"),
        ("😀", 1, ""),
        ("ab cd", 3, "ab "),  # the cut keeps the space it lands on, as TomoriBot's slice does
        ("ab \n\n cd", 3, "ab "),  # collapsed before cutting, so the space counts once
        ("ab\ufeff\u00a0cd", 4, "ab c"),  # JavaScript's white space: U+FEFF and U+00A0 collapse
        ("ab\u0085\u001fcd", 9, "ab\u0085\u001fcd"),  # and U+0085, U+001F are no white space there
        ("ab \n\n cd", 5, "ab cd"),
        ("é" * 4, 3, "é" * 3),  # a BMP character is one unit even when it is not ASCII
        ("  abc  ", 3, "abc"),  # the trim comes before the limit
    ],
)
def test_cut_to_utf16_units(bio: str, max_units: int, expected: str) -> None:
    assert normalize_bio(bio, max_units) == expected


def test_cut_counts_a_lone_surrogate_as_one_unit() -> None:
    # JSON input can carry one; JavaScript counts it as one unit, and so do we.
    assert normalize_bio("ab\ud800cd", 3) == "ab\ud800"


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_normalized_bio_properties(bio: str, max_units: int) -> None:
    out = normalize_bio(bio, max_units)
    assert utf16_length(out) <= max_units
    assert out == js_trim(out) or (out.endswith(" ") and utf16_length(js_trim(bio)) > max_units)
    assert "  " not in out and not any(ch in JS_WHITESPACE and ch != " " for ch in out)
    # A prefix of the collapsed text: nothing is reordered or invented.
    assert js_trim(JS_SPACE_RUN.sub(" ", bio)).startswith(out)


# --- decide_seed ---------------------------------------------------------------------------------


def seed(bio: str | None = "Nova loves astronomy.", *, new: bool = True) -> SeedBio:
    return seed_bio_command("500000000000000001", IDENTITY, bio, new=new, envelope_fields=fixed_envelope("seed-1"))


def decide(
    cmd: SeedBio | None = None,
    identity: ProxyIdentity | None = OPEN,
    *,
    already_seeded: bool = False,
    lineage0_count: int = 0,
    max_units: int = 1000,
) -> SeedPlan | SeedSkip:
    return decide_seed(
        cmd or seed(),
        identity,
        already_seeded=already_seeded,
        lineage0_count=lineage0_count,
        limits=LIMITS,
        max_units=max_units,
    )


def test_seed_plan_carries_the_normalized_bio() -> None:
    assert decide(seed("  Nova\n\nloves   astronomy.  ")) == SeedPlan("Nova loves astronomy.", OPEN.user_id)


def test_seed_plan_is_cut_to_max_units() -> None:
    assert decide(seed("abcdef"), max_units=4) == SeedPlan("abcd", OPEN.user_id)


@pytest.mark.parametrize("count", [0, 1, 9])
def test_below_the_personal_limit_seeds(count: int) -> None:
    assert isinstance(decide(lineage0_count=count), SeedPlan)


@pytest.mark.parametrize("count", [10, 11, 500])
def test_at_or_over_the_personal_limit_skips(count: int) -> None:
    result = decide(lineage0_count=count)
    assert isinstance(result, SeedSkip)
    assert "limit" in result.reason and "10" in result.reason and str(count) in result.reason


@pytest.mark.parametrize("bio", [None, "", "   ", "\n\t\u00a0"])
def test_blank_bio_skips(bio: str | None) -> None:
    assert decide(seed(bio)) == SeedSkip(BLANK_BIO)


def test_a_bio_cut_to_nothing_is_blank() -> None:
    assert decide(seed("😀"), max_units=1) == SeedSkip(BLANK_BIO)


def test_not_new_identity_skips() -> None:
    assert decide(seed(new=False)) == SeedSkip(NOT_NEW)


def test_already_seeded_skips() -> None:
    assert decide(already_seeded=True) == SeedSkip(ALREADY_SEEDED)


@pytest.mark.parametrize(
    ("identity", "why"),
    [
        (None, NO_HOST),
        (ProxyIdentity(99, IDENTITY, ()), NO_HOST),
        (ProxyIdentity(99, IDENTITY, (HostLink(HOST, privacy_level=2),)), HOST_FULL_PRIVACY),
        (ProxyIdentity(99, IDENTITY, (HostLink(HOST, blacklisted=True),)), HOST_BLACKLISTED),
        (ProxyIdentity(99, IDENTITY, (HostLink(HOST), HostLink("2", privacy_level=2))), HOST_FULL_PRIVACY),
    ],
)
def test_protected_host_skips(identity: ProxyIdentity | None, why: str) -> None:
    assert decide(identity=identity) == SeedSkip(why)


def test_partial_host_privacy_seeds() -> None:
    partial = ProxyIdentity(99, IDENTITY, (HostLink(HOST, privacy_level=1),))
    assert isinstance(decide(identity=partial), SeedPlan)


# Each row makes every later check fail too, so only the order picks the reason.
@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"cmd": seed("", new=False), "identity": None, "already_seeded": True, "lineage0_count": 99}, NOT_NEW),
        ({"cmd": seed(""), "identity": None, "already_seeded": True, "lineage0_count": 99}, ALREADY_SEEDED),
        # TomoriBot's order: a blank bio returns before the host is looked at.
        ({"cmd": seed(""), "identity": None, "lineage0_count": 99}, BLANK_BIO),
        ({"cmd": seed(), "identity": None, "lineage0_count": 99}, NO_HOST),
    ],
)
def test_skip_reasons_come_in_order(kwargs: dict, reason: str) -> None:
    assert decide(**kwargs) == SeedSkip(reason)


def test_reasons_are_distinct() -> None:
    assert len({NOT_NEW, ALREADY_SEEDED, BLANK_BIO, NO_HOST}) == 4
