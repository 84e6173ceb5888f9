"""Message-proxy identities and the host protection of docs/design.md, section 4 step 9 and 4.1.

A proxy identity (PluralKit, PluralBuddy) is a synthetic user whose messages are written by
real Discord accounts, its hosts. Whatever the identity's own settings, its memories are only
written when every host allows it: a host at FULL privacy or blacklisted in this workspace
protects the identity, and an identity whose hosts cannot be resolved is protected too (fail
closed: not knowing the host must not open a way around the host's privacy; TomoriBot saves
there). PARTIAL host privacy does not protect: it limits what is remembered about the host,
not about the characters they write.

Which ids are proxy identities is TomoriBot's grammar (src/utils/messageProxy/identityUserId.ts
and the services' descriptors, Bredrumb/TomoriBot@60e529b0), recognised here only
(`is_proxy_identity_id`):

- an official instance: the service's prefix and its external key: `pk:<uuid>` (an RFC 4122
  UUID, versions 1 to 5 with the RFC variant, hex in any case) or `pb:<1 to 20 ASCII digits>`;
- a custom instance: `<prefix>i:<length>:<instance>:<key>`, where the instance is the service
  name, a colon and a lower-case dashed UUID (`pluralkit:<uuid>`, `pluralbuddy:<uuid>`) and
  `<length>` its length in decimal (46 and 48; leading zeros read as JavaScript's Number does).
"""

from __future__ import annotations

import re
from typing import Literal

from worker.domain.people import Privacy, ProxyIdentity

__all__ = ["WORDS", "HostProtection", "host_protection", "is_proxy_identity_id"]

_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
_LOWER_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# (prefix, service id, external key) in the registry's order.
_SERVICES = (("pk:", "pluralkit", re.compile(_UUID)), ("pb:", "pluralbuddy", re.compile("[0-9]{1,20}")))
_INSTANCE_LENGTH = re.compile("i:([0-9]+):")
_INSTANCE_UUID = re.compile(_LOWER_UUID)


def _is_custom_instance(service: str, instance: str) -> bool:
    head = f"{service}:"
    return instance.startswith(head) and _INSTANCE_UUID.fullmatch(instance[len(head):]) is not None


def is_proxy_identity_id(value: str) -> bool:
    """TomoriBot's `isMessageProxyIdentityUserId`: the first service whose prefix the id has
    decides, and the id must then parse whole."""
    for prefix, service, key in _SERVICES:
        if not value.startswith(prefix):
            continue
        rest = value[len(prefix):]
        if rest.startswith("i:"):
            length = _INSTANCE_LENGTH.match(rest)
            if length is None:
                return False
            digits = length.group(1).lstrip("0") or "0"
            if len(digits) > 9:  # longer than any id (and than int() reads without a limit)
                return False
            start = length.end()
            end = start + int(digits)
            if rest[end:end + 1] != ":" or not _is_custom_instance(service, rest[start:end]):
                return False
            rest = rest[end + 1:]
        return key.fullmatch(rest) is not None
    return False


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
