"""Proxy identity ids as TomoriBot writes them, and the host protection rule (docs/design.md, section 4)."""

from __future__ import annotations

import pytest

from worker.domain.people import HostLink, Privacy, ProxyIdentity
from worker.domain.proxy import (
    HOST_BLACKLISTED,
    HOST_FULL_PRIVACY,
    NO_HOST,
    WORDS,
    host_protection,
    is_proxy_identity_id,
)

# An RFC 4122 UUID (version 4, variant 8): what PluralKit member ids are.
UUID = "0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
INSTANCE = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"  # a custom instance's UUID (any version)
HOST = "100000000000000001"
OTHER = "100000000000000002"


# src/utils/messageProxy/identityUserId.ts and the services' descriptors (Bredrumb/TomoriBot @60e529b0,
# pluralbuddy @0b77e88b).
@pytest.mark.parametrize(
    "value",
    [
        f"pk:{UUID}",
        f"pk:{UUID.upper()}",
        "pk:0F8e4C1a-2b3D-4e5f-8A9b-0c1d2e3f4a5b",
        "pk:00000000-0000-1000-8000-000000000000",  # version 1
        "pk:00000000-0000-5000-b000-000000000000",  # version 5, variant b
        "pb:0",
        "pb:12345678901234567890",  # 20 digits
        f"pk:i:46:pluralkit:{INSTANCE}:{UUID}",
        f"pk:i:46:pluralkit:{INSTANCE}:{UUID.upper()}",
        f"pk:i:046:pluralkit:{INSTANCE}:{UUID}",  # the length read as JavaScript's Number reads it
        f"pb:i:48:pluralbuddy:{INSTANCE}:42",
    ],
)
def test_proxy_identity_ids(value: str) -> None:
    assert is_proxy_identity_id(value)


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
        "pk:00000000-0000-0000-8000-000000000000",  # version 0
        "pk:00000000-0000-6000-8000-000000000000",  # version 6
        "pk:00000000-0000-4000-c000-000000000000",  # variant c
        "pk:00000000-0000-4000-7000-000000000000",  # variant 7
        f" pk:{UUID}",
        f"pk:{UUID}\n",
        "pb:12a",
        "pb:-12",
        "pb:12 ",
        "pb:\u0661\u0662",  # Arabic-Indic digits are digits to Python, not to a proxy
        "pb:12\n",
        "pb:123456789012345678901",  # 21 digits
        f"pb:{UUID}",
        "pk:12",
        "xx:12",
        "@pk:12",
        f"pk:i:45:pluralkit:{INSTANCE}:{UUID}",  # the wrong length
        f"pk:i:47:pluralkit:{INSTANCE}:{UUID}",
        f"pk:i:46:pluralkit:{INSTANCE.upper()}:{UUID}",  # the instance's UUID is lower case only
        f"pk:i:48:pluralbuddy:{INSTANCE}:{UUID}",  # another service's instance
        f"pb:i:46:pluralkit:{INSTANCE}:42",
        f"pk:i:46:pluralkit:{INSTANCE}:12",  # a PluralBuddy key under PluralKit
        f"pk:i:46:pluralkit:{INSTANCE}",
        f"pk:i:46:pluralkit:{INSTANCE}:",
        "pk:i:18:pluralkit:official:" + UUID,  # the official instance is never written this way
        "pk:i::pluralkit",
        "pk:i:x:" + UUID,
        "pk:i:" + "9" * 5000 + ":x",  # a length no id could have
        "pb:i:48:pluralbuddy:" + INSTANCE + ":123456789012345678901",
    ],
)
def test_not_proxy_identity_ids(value: str) -> None:
    assert not is_proxy_identity_id(value)


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
    protection = host_protection(subject)
    assert protection is not None and WORDS[protection] == why


def test_reasons_are_distinct_readable_sentences() -> None:
    reasons = {NO_HOST, HOST_FULL_PRIVACY, HOST_BLACKLISTED}
    assert len(reasons) == 3
    assert "/personal config" in HOST_FULL_PRIVACY
    assert "server manager" in HOST_BLACKLISTED
    for reason in reasons:
        # They are spliced into sentences, so they start lowercase and carry no final period.
        assert reason[0].islower() and not reason.endswith(".")
        assert HOST not in reason  # no Discord ids in text a model relays
