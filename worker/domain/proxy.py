"""Message-proxy identities and the host protection of docs/design.md, section 4 step 7.

A proxy identity (PluralKit `pk:<uuid>`, a bridge's `pb:<digits>`) is a synthetic user
whose messages are written by real Discord accounts, its hosts. Whatever the identity's own
settings, its memories are only written when every host allows it: a host at FULL privacy
or blacklisted in this workspace protects the identity, and an identity whose hosts cannot
be resolved is protected too (fail closed: not knowing the host must not open a way around
the host's privacy). PARTIAL host privacy does not protect: it limits what is remembered
about the host, not about the characters they write.
"""

from __future__ import annotations

import re
from typing import Literal

from worker.domain.model import Privacy, ProxyIdentity

__all__ = ["WORDS", "HostProtection", "host_protection", "is_synthetic_id"]

# The prefixes are lowercase as the proxies write them; the UUID's hex may come in either case.
_HEX = "[0-9a-fA-F]"
_SYNTHETIC_ID = re.compile(
    rf"pk:{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}|pb:[0-9]+"
)

# Why an identity is protected, and how each reason is worded.
HostProtection = Literal["no_host", "host_full_privacy", "host_blacklisted"]
NO_HOST = (
    "this proxy identity is not linked to any account I can check, so I can't confirm that "
    "its host allows it"
)
HOST_FULL_PRIVACY = (
    "the account that hosts this proxy identity has full privacy turned on; only they can "
    "change that, with /personal config"
)
HOST_BLACKLISTED = (
    "the account that hosts this proxy identity is excluded from personalization on this "
    "server; a server manager can change that"
)
WORDS: dict[HostProtection, str] = {"no_host": NO_HOST, "host_full_privacy": HOST_FULL_PRIVACY,
                                    "host_blacklisted": HOST_BLACKLISTED}


def is_synthetic_id(value: str) -> bool:
    """`pk:` and a dashed UUID (hex in any case), or `pb:` and ASCII digits; nothing around them."""
    return _SYNTHETIC_ID.fullmatch(value) is not None


def host_protection(identity: ProxyIdentity | None) -> HostProtection | None:
    """Why nothing may be written for `identity`, or None when every host allows it."""
    if identity is None or not identity.hosts:
        return "no_host"
    # Privacy is the host's own choice and holds everywhere, so it is named before a
    # workspace's blacklist when both apply.
    if any(host.privacy_level >= Privacy.FULL for host in identity.hosts):
        return "host_full_privacy"
    if any(host.blacklisted for host in identity.hosts):
        return "host_blacklisted"
    return None
