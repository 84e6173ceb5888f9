"""The worker's text and id rules give TomoriBot's outputs on its own functions' input/output pairs.

The pairs (tests/parity/tomoribot/*.json) were produced by running the bot's public functions
under Node; each file's header names the upstream file and commit. Nothing of the bot's code is
in this repository: only what its functions returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from worker.domain.content import js_trim, sanitize, utf16_length
from worker.domain.proxy import is_proxy_identity_id
from worker.domain.targets import is_bridge_user_id, is_snowflake, normalize
from worker.domain.tool_texts import bridge_display_name, format_bridge_label, format_discord_user_label
from worker.kinds.seed_bio.decision import normalize_bio
from worker.shared.settings import js_positive_int

PAIRS = Path(__file__).resolve().parents[1] / "parity" / "tomoribot"


def _pairs(name: str) -> list[Any]:
    data = json.loads((PAIRS / f"{name}.json").read_text(encoding="utf-8"))
    assert data["source"].startswith("Bredrumb/TomoriBot") and data["pairs"]
    return list(data["pairs"])


def _limit(args: list[Any]) -> int:
    raw, default = args
    return js_positive_int(raw, default)


# A limit past JavaScript's largest exact integer is kept at it (no count reaches either).
MAX_SAFE = 2**53 - 1


ONE_TO_ONE: dict[str, Callable[[Any], Any]] = {
    "trim": js_trim,
    "normalize_participant_alias": normalize,
    "sanitize": sanitize,
    "utf16_length": utf16_length,
    "is_bridge_user_id": is_bridge_user_id,
    "is_discord_snowflake": is_snowflake,
    "format_bridge_user_label": format_bridge_label,
    "bridge_display_name": bridge_display_name,
    "is_message_proxy_identity_user_id": is_proxy_identity_id,
    "parse_positive_integer_env": _limit,
    "bio_seed_max_chars": lambda raw: js_positive_int(raw, 1000),
}


@pytest.mark.parametrize("name", sorted(ONE_TO_ONE))
def test_the_worker_gives_tomoribots_output_for_every_pair(name: str) -> None:
    rule = ONE_TO_ONE[name]
    pairs = [(given, min(expected, MAX_SAFE) if type(expected) is int else expected) for given, expected in _pairs(name)]
    wrong = [(given, expected, rule(given)) for given, expected in pairs if rule(given) != expected]
    assert wrong == []


def test_discord_labels_are_tomoribots_and_a_blank_username_adds_no_handle() -> None:
    """A Discord user always has a username; a bot may leave it out of a command, and the
    worker then shows no empty handle (TomoriBot would write "Name (@)")."""
    wrong = []
    for (display, global_name, username), expected in _pairs("format_discord_user_label"):
        if not js_trim(username):
            expected = expected.removesuffix(" (@)")
        if (got := format_discord_user_label(display, global_name, username)) != expected:
            wrong.append((display, global_name, username, expected, got))
    assert wrong == []


def _is_high_surrogate(char: str) -> bool:
    return 0xD800 <= ord(char) <= 0xDBFF


def test_the_bio_seed_is_tomoribots_except_half_a_surrogate_pair() -> None:
    """Blank (null) where TomoriBot returns before its host check; the cut keeps a trailing
    space as JavaScript's slice does. Where that slice ends in half a surrogate pair, the worker
    stops before the pair instead (PostgreSQL cannot store half a pair; TomoriBot's driver
    writes U+FFFD there): docs/tomoribot.md lists this as an intended difference."""
    wrong = []
    halves = 0
    for (bio, max_chars), expected in _pairs("bio_seed_content"):
        got = normalize_bio(bio, js_positive_int(max_chars, 1000)) or None
        if expected is not None and _is_high_surrogate(expected[-1]):
            halves += 1
            expected = expected[:-1] or None
        if got != expected:
            wrong.append((bio, max_chars, expected, got))
    assert wrong == []
    assert halves > 0  # the data holds the case the exception is for
