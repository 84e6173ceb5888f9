"""Plain values the pure domain takes and returns. No I/O anywhere under worker/domain/."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum, StrEnum
from typing import Literal

from contracts.kinds.manual import ManualStatus

Scope = Literal["server", "personal"]
ToolScope = Literal["server_wide", "target_user"]
# A model save's memory scope, from the scope its result names in the tool's words: the
# memories of a server are `server_wide`, a person's `target_user` (worker/domain/create.py).
SCOPE_OF: Mapping[str, Scope] = {"server_wide": "server", "target_user": "personal"}


class Privacy(IntEnum):
    """`users.privacy_level`: how much a person lets the bot remember about them. The schema's
    CHECK holds the column to these values (tests/integration/test_save_outcome.py); a level
    read that is none of them counts as FULL wherever it is read (fail closed)."""

    OPEN = 0
    PARTIAL = 1  # no personal memories saved by the model; the host of a proxy is not protected
    FULL = 2  # nothing personal kept; a proxy identity it hosts is protected too


@dataclass(frozen=True, slots=True)
class Limits:
    max_memory_length: int = 1000
    max_server_memories: int = 100
    max_personal_memories: int = 100
    # The secret guard for a workspace that made no choice of its own (SECRET_GUARD_DEFAULT).
    secret_guard_default: bool = True


@dataclass(frozen=True, slots=True)
class Workspace:
    """The command's workspace settings, wherever the bot keeps them (defaults when it wrote none yet)."""

    server_id: int | None = None
    self_teaching_enabled: bool = True  # the model may save (the create tool's gate)
    personal_memories_enabled: bool = True
    # The model's memories are checked for credentials (worker/domain/secret_guard/); None:
    # the workspace made no choice, the operator's default applies.
    secret_guard_enabled: bool | None = None
    # People who are not managers may teach through the panels. Standalone: the same setting
    # as self-teaching; TomoriBot keeps it apart (server_memteaching_enabled).
    member_teaching_enabled: bool = True
    memory_decay_enabled: bool = False
    memory_decay_days: int = 30


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


@dataclass(frozen=True, slots=True)
class CreateContext:
    """What the database knows that the create decision needs, read at processing time."""

    workspace: Workspace = field(default_factory=Workspace)
    # users rows by Discord id, for the ids that lookup_ids() named and that have a row
    users: Mapping[str, KnownUser] = field(default_factory=dict)
    # proxy identities among the looked-up ids, by synthetic id (absent: no identity row)
    proxies: Mapping[str, ProxyIdentity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A memory row as the eviction rule sees it."""

    memory_id: int
    lineage_id: int
    manually_written: bool
    created_at: datetime
    last_reinforced_at: datetime | None
    content: str = ""


CapacityAction = Literal["insert", "evict", "refuse_at_cap", "refuse_over_cap"]


class SaveOutcome(StrEnum):
    """How a create's save ends under the owner lock; the same labels are the SQL enum
    memory_worker.save_outcome. memory_create_batch() names one for each save and stores it in
    the command's facts; worker/domain/create_result.py renders each."""

    SAVED = "saved"  # below the cap: inserted
    SAVED_WITH_EVICTION = "saved_with_eviction"  # at the cap: one dormant row replaced
    AT_CAP = "at_cap"  # at the cap, and nothing may or can be replaced
    OVER_CAP = "over_cap"  # above the cap (it was lowered): never replaces
    PRIVACY_PARTIAL = "privacy_partial"  # the user's privacy_level, read under the lock, is 1
    PRIVACY_FULL = "privacy_full"  # any other level but 0, or the users row is gone (fails closed)
    HOST_PROTECTED = "host_protected"  # a proxy identity's host protects it, read under the lock
# What keeps a save at the cap from replacing a dormant row (worker/domain/capacity.py).
EvictionBlocker = Literal["decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model"]


@dataclass(frozen=True, slots=True)
class PanelMemory:
    """A memory row as the panels see it."""

    memory_id: int
    lineage_id: int
    content: str
    tags: tuple[str, ...] = ()
    manually_written: bool = False
    taught_by: str | None = None  # Discord id of the teacher (server rows); None if unknown


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """A memory's text and tags: an import's entry, or a stored row it is compared with."""

    content: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ManualContext:
    """What a memory.manual decision needs, read inside the owner's locked transaction."""

    workspace: Workspace = field(default_factory=Workspace)
    actor_privacy_level: int = Privacy.OPEN  # 0 when the actor has no users row
    actor_blacklisted: bool = False  # actor in this workspace's personalization_blacklist
    identity: ProxyIdentity | None = None  # set when identity_id names a known identity
    identity_hosted_by_actor: bool = False
    count: int = 0  # the owner's rows as the cap counts them (personal: lineage + lineage 0)
    target: PanelMemory | None = None  # edit/remove: memory_id within this owner and exact lineage
    existing_contents: tuple[str, ...] = ()  # add_batch: contents at this owner and lineage
    lineage_rows: tuple[MemoryEntry, ...] = ()  # import: every row of this owner and exact lineage


@dataclass(frozen=True, slots=True)
class Refuse:
    status: ManualStatus
    reason: str
    extra: Mapping[str, int] = field(default_factory=dict)  # available/requested for batches


@dataclass(frozen=True, slots=True)
class Insert:
    contents: tuple[str, ...]
    tags: tuple[str, ...]
    skipped_duplicates: int = 0


@dataclass(frozen=True, slots=True)
class Update:
    memory_id: int
    content: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unchanged:
    memory_id: int


@dataclass(frozen=True, slots=True)
class Delete:
    memory_id: int
    content: str


@dataclass(frozen=True, slots=True)
class Import:
    """An import's write: with `replace`, first delete every row of the owner and exact lineage."""

    entries: tuple[MemoryEntry, ...]
    replace: bool
    skipped_duplicates: int = 0


ManualDecision = Refuse | Insert | Update | Unchanged | Delete | Import


@dataclass(frozen=True, slots=True)
class SeedPlan:
    content: str
    user_id: int  # the identity's users.user_id: whose lineage-0 row it becomes


@dataclass(frozen=True, slots=True)
class SeedSkip:
    reason: str


SeedDecision = SeedPlan | SeedSkip
