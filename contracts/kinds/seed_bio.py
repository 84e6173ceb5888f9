"""`memory.seed_bio`: a new proxy identity's one-time bio snapshot, the result and its statuses."""

from __future__ import annotations

from typing import Final, Literal

from ..envelope import Envelope
from ..fields import PanelText, SyntheticId
from ..result_parts import Failed, OpDataBase, OpResultBase


class SeedBio(Envelope, kw_only=True, frozen=True):
    """`memory.seed_bio`: the one-time bio snapshot of a new proxy identity.

    The bio becomes one global (lineage 0) personal memory of the identity, source bio_seed,
    at most once per identity whatever the command id; it is skipped for an identity that is
    not new, a blank bio, a host that protects the identity, or a full lineage 0.

    Attributes:
        identity_user_id: The identity's synthetic id (`pk:<uuid>` for PluralKit, `pb:<digits>`
            for PluralBuddy, `<prefix>i:<length>:<instance>:<key>` for a custom instance). The bot
            must have written its users row and its host links first: an identity with no
            resolvable host is skipped as protected.
        is_new_identity: True only when the bot has just created this identity's row; false is
            answered skipped.
        bio: The identity's profile text as the proxy reports it; whitespace is collapsed and it
            is cut to MESSAGE_PROXY_BIO_SEED_MAX_CHARS (default 1000 UTF-16 units). null or
            blank: skipped.
    """

    identity_user_id: SyntheticId
    is_new_identity: bool
    bio: PanelText | None = None


SeedBioStatus = Literal["seeded", "skipped", Failed]
SEEDED: Final[SeedBioStatus] = "seeded"
SKIPPED: Final[SeedBioStatus] = "skipped"


class SeedBioData(OpDataBase, kw_only=True):
    """`data` of a bio seed's result.

    Attributes:
        status: seeded (with memory_id), skipped (reason says why: not a new identity, already
            seeded, blank bio, a protecting host, a full lineage 0), or failed when the worker
            gave up.
    """

    status: SeedBioStatus


class SeedBioResult(OpResultBase, kw_only=True):
    """Result of memory.seed_bio."""

    data: SeedBioData
