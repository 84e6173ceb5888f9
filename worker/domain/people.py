"""The people the domain reads: users rows, their privacy level and naming, and message-proxy identities with their hosts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal


class Privacy(IntEnum):
    """`users.privacy_level`: how much a person lets the bot remember about them. The schema's
    CHECK holds the column to these values (tests/integration/test_save_outcome.py); a level
    read that is none of them counts as FULL wherever it is read (fail closed)."""

    OPEN = 0
    PARTIAL = 1  # no personal memories saved by the model; the host of a proxy is not protected
    FULL = 2  # nothing personal kept; a proxy identity it hosts is protected too


AddressingStyle = Literal["masculine", "feminine", "neutral"]


@dataclass(frozen=True, slots=True)
class PersonaNamingPreference:
    """What a person set for one persona lineage (TomoriBot's user_persona_naming_preferences):
    None is "not set"; an empty affix is set, and means none."""

    nickname: str | None = None
    prefix: str | None = None
    suffix: str | None = None


@dataclass(frozen=True, slots=True)
class KnownUser:
    """A `users` row, with what the target resolution and the notice read of the person."""

    user_id: int
    disc_id: str
    nickname: str | None = None  # the saved (global) nickname
    privacy_level: int = Privacy.OPEN
    # Their global naming (TomoriBot's user_personalization_configs): affix overrides (None:
    # not set, "": none) and how they are addressed.
    prefix_override: str | None = None
    suffix_override: str | None = None
    addressing_style: AddressingStyle | None = None
    persona_naming: PersonaNamingPreference | None = None  # for the command's lineage
    blacklisted: bool = False  # in this workspace's personalization blacklist


@dataclass(frozen=True, slots=True)
class HostLink:
    """A Discord account hosting a proxy identity's namespace, as this workspace sees it."""

    disc_id: str
    privacy_level: int = Privacy.OPEN  # the host's users.privacy_level (0 when the host has no users row)
    blacklisted: bool = False  # in personalization_blacklist of the command's workspace


@dataclass(frozen=True, slots=True)
class ProxyIdentity:
    """A message-proxy identity (`pk:<uuid>`, `pb:<digits>`): a synthetic users row."""

    user_id: int
    disc_id: str
    hosts: tuple[HostLink, ...] = ()  # empty: no resolvable host link
    privacy_level: int = Privacy.OPEN  # the identity's own users.privacy_level
