"""The one-time bio snapshot of a new proxy identity (`memory.seed_bio`, docs/design.md, section 8.3).

The bio becomes one global (lineage 0) memory of the identity. The decision here is pure; the
persistence layer reads whether the identity was already seeded and its lineage-0 count under
the owner lock, then writes the memory and the `bio_seeds` row in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.kinds.seed_bio import SeedBio
from worker.domain.content import JS_SPACE_RUN, js_trim, utf16_length
from worker.domain.people import ProxyIdentity
from worker.domain.proxy import NO_HOST, WORDS, host_protection
from worker.domain.workspace import Limits

__all__ = [
    "ALREADY_SEEDED",
    "BLANK_BIO",
    "NOT_NEW",
    "decide_seed",
    "normalize_bio",
]

NOT_NEW = "not a new identity"
ALREADY_SEEDED = "already seeded"
BLANK_BIO = "blank bio"
_BMP_END = 0x10000  # code points from here on take two UTF-16 units (a surrogate pair)



@dataclass(frozen=True, slots=True)
class SeedPlan:
    content: str
    user_id: int  # the identity's users.user_id: whose lineage-0 row it becomes


@dataclass(frozen=True, slots=True)
class SeedSkip:
    reason: str


SeedDecision = SeedPlan | SeedSkip


def _cut_utf16(text: str, max_units: int) -> str:
    """The longest prefix of `text` within `max_units` UTF-16 units; never half a pair."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) >= _BMP_END else 1
        if units > max_units:
            return text[:index]
    return text


def normalize_bio(bio: str | None, max_units: int) -> str:
    """Collapse whitespace to single spaces, trim, and cut to `max_units` UTF-16 units, with
    JavaScript's white space as TomoriBot's seed has it. A cut keeps the space it may end on, as
    TomoriBot's `slice` does; it never keeps half a surrogate pair (PostgreSQL cannot store one)."""
    text = js_trim(JS_SPACE_RUN.sub(" ", bio or ""))
    if utf16_length(text) <= max_units:
        return text
    return _cut_utf16(text, max(max_units, 0))


def _limit_reason(count: int, cap: int) -> str:
    return f"the identity already has {count} global memories, the personal limit is {cap}"


def decide_seed(
    cmd: SeedBio,
    identity: ProxyIdentity | None,
    *,
    already_seeded: bool,
    lineage0_count: int,
    limits: Limits,
    max_units: int,
) -> SeedDecision:
    """Seed once per new identity, unless its host protects it or nothing is left to seed.

    The one-time checks come first: a duplicate seed is skipped for that reason even when its
    host has since become protected, which is what an operator reading it expects.
    """
    if not cmd.is_new_identity:
        return SeedSkip(NOT_NEW)
    if already_seeded:
        return SeedSkip(ALREADY_SEEDED)
    # TomoriBot's order: a blank bio returns before the host is looked at.
    content = normalize_bio(cmd.bio, max_units)
    if not content:
        return SeedSkip(BLANK_BIO)
    protected = host_protection(identity)
    if protected is not None or identity is None:  # no identity: host_protection said NO_HOST
        return SeedSkip(WORDS[protected] if protected is not None else NO_HOST)
    # A seed never evicts: lineage 0 is never replaced automatically, so a full owner skips.
    if lineage0_count >= limits.max_personal_memories:
        return SeedSkip(_limit_reason(lineage0_count, limits.max_personal_memories))
    return SeedPlan(content, identity.user_id)
