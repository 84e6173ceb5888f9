"""Proxy id shapes and the host protection rule (docs/design.md, section 4 step 7)."""

from __future__ import annotations

import pytest

from worker.domain.model import HostLink, Privacy, ProxyIdentity
from worker.domain.proxy import (
    HOST_BLACKLISTED,
    HOST_FULL_PRIVACY,
    NO_HOST,
    WORDS,
    host_protection,
    is_synthetic_id,
)

UUID = "0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
HOST = "100000000000000001"
OTHER = "100000000000000002"


@pytest.mark.parametrize(
    "value",
    [f"pk:{UUID}", f"pk:{UUID.upper()}", "pk:0F8e4C1a-2b3D-4e5f-8A9b-0c1d2e3f4a5b", "pb:0", "pb:1234567890123456789012"],
)
def test_synthetic_ids(value: str) -> None:
    assert is_synthetic_id(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "pk:",
        "pb:",
        UUID,
        "1234",
        HOST,
        f"PK:{UUID}",  # the prefixes are lowercase
        "PB:12",
        f"pk:{UUID.replace('-', '')}",  # a UUID without dashes
        f"pk:{UUID[:-1]}",
        f"pk:{UUID}0",
        f"pk:{UUID[:-1]}g",
        f" pk:{UUID}",
        f"pk:{UUID}\n",
        "pb:12a",
        "pb:-12",
        "pb:12 ",
        "pb:\u0661\u0662",  # Arabic-Indic digits are digits to Python, not to a proxy
        "pb:12\n",
        f"pb:{UUID}",
        "pk:12",
        "xx:12",
        "@pk:12",
    ],
)
def test_not_synthetic_ids(value: str) -> None:
    assert not is_synthetic_id(value)


def identity(*hosts: HostLink) -> ProxyIdentity:
    return ProxyIdentity(user_id=99, disc_id=f"pk:{UUID}", hosts=hosts)


@pytest.mark.parametrize(
    "hosts",
    [
        (HostLink(HOST),),
        (HostLink(HOST, privacy_level=1),),  # partial host privacy does not protect
        (HostLink(HOST), HostLink(OTHER, privacy_level=1)),
        (HostLink(HOST, privacy_level=0, blacklisted=False), HostLink(OTHER)),
    ],
)
def test_open_hosts_allow_writing(hosts: tuple[HostLink, ...]) -> None:
    assert host_protection(identity(*hosts)) is None


@pytest.mark.parametrize(
    ("subject", "why"),
    [
        (None, NO_HOST),
        (identity(), NO_HOST),
        (identity(HostLink(HOST, privacy_level=Privacy.FULL)), HOST_FULL_PRIVACY),
        (identity(HostLink(HOST, blacklisted=True)), HOST_BLACKLISTED),
        (identity(HostLink(HOST), HostLink(OTHER, privacy_level=2)), HOST_FULL_PRIVACY),
        (identity(HostLink(HOST, privacy_level=2), HostLink(OTHER)), HOST_FULL_PRIVACY),
        (identity(HostLink(HOST), HostLink(OTHER, blacklisted=True)), HOST_BLACKLISTED),
        (identity(HostLink(HOST, privacy_level=1, blacklisted=True)), HOST_BLACKLISTED),
        # Both apply: the host's own choice is named first.
        (identity(HostLink(HOST, blacklisted=True), HostLink(OTHER, privacy_level=2)), HOST_FULL_PRIVACY),
        (identity(HostLink(HOST, privacy_level=2, blacklisted=True)), HOST_FULL_PRIVACY),
    ],
    ids=["no-identity", "no-host", "full", "blacklisted", "second-full", "first-full",
         "second-blacklisted", "partial-blacklisted", "full-beats-blacklist", "full-and-blacklisted"],
)
def test_protected(subject: ProxyIdentity | None, why: str) -> None:
    assert host_protection(subject) is not None and WORDS[host_protection(subject)] == why


def test_reasons_are_distinct_readable_sentences() -> None:
    reasons = {NO_HOST, HOST_FULL_PRIVACY, HOST_BLACKLISTED}
    assert len(reasons) == 3
    assert "/personal config" in HOST_FULL_PRIVACY
    assert "server manager" in HOST_BLACKLISTED
    for reason in reasons:
        # They are spliced into sentences, so they start lowercase and carry no final period.
        assert reason[0].islower() and not reason.endswith(".")
        assert HOST not in reason  # no Discord ids in text a model relays
