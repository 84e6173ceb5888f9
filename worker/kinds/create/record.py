"""A create's decision as its inbox row stores it, and what its save learned under the lock.

The pure decision (worker/kinds/create/decision.py) ends in one of these values: a refusal decided
before the lock, or the `SavePlan` of a save. memory_create_batch() stores it as sent
(processed_commands.decision) and, for a save, the `SaveSettled` only the locked transaction
knows (processed_commands.facts): the outcome, the new id, the count, the forgotten row.
Nothing else about the command is kept: its reply, every repeat of it, the result lookup's
answer (worker/kinds/create/rendering.py) and its events (worker/domain/events.py) are rendered
from the two, the same way every time. So a repeat answered after an upgrade is worded by the
newer code, as its events are.

A decision holds values, not words. codes and values the texts are rendered from. Its JSON is
the stored format (tests/unit/test_create_rendering.py holds examples as older releases stored them to
what it renders), so fields are only ever added, with defaults.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from worker.domain import proxy
from worker.domain.notice import NoticeRoute
from worker.domain.scope import Scope, ToolScope
from worker.domain.secret_guard import CredentialKind
from worker.domain.tool_arguments import ParameterCheck
from worker.kinds.create.outcome import EvictionBlocker, SaveOutcome

__all__ = [
    "CreateTargetAmbiguous",
    "CreateDecision",
    "Disabled",
    "HostProtected",
    "HostProtection",
    "InvalidArgs",
    "InvalidContent",
    "MissingPart",
    "MissingState",
    "PrivacyRestricted",
    "ReservedLineage",
    "SaveSettled",
    "SavePlan",
    "CreateSecretRefused",
    "UserNotFound",
]

# Why a proxy identity is protected: worker/domain/proxy.py's reasons, or (read again under
# the lock) a host's protection changed while saving.
HostProtection = proxy.HostProtection | Literal["changed_while_saving"]


class _Decided(msgspec.Struct, frozen=True, tag_field="decided"):
    """The stored union's base: its `decided` key names the member."""


class InvalidArgs(_Decided, frozen=True, tag="invalid_args"):
    """The model's arguments are unusable; exactly one of the fields says how (a row stored
    before issue 37 has only `detail`, the worker's own wording then)."""

    detail: str = ""
    # TomoriBot's parameter check failed (or a legacy target name held no string).
    check: ParameterCheck | None = None
    # Blank after trimming: memory_content, or (scope target_user) every target name.
    blank: Literal["memory_content", "target_user"] | None = None
    # Worker-only: the parameter holds a NUL character, which PostgreSQL text cannot store.
    nul_in: str | None = None


class Disabled(_Decided, frozen=True, tag="disabled"):
    tool_scope: ToolScope
    # Rows stored before issue 37 only: personal memories were off. Since then that switch
    # saves and changes only the notice's footer, as in TomoriBot.
    personal: bool = False


MissingPart = Literal["triggerer", "triggerer_user", "persona_id"]


class MissingState(_Decided, frozen=True, tag="missing_state"):
    """TomoriBot's "critical state" check: the command names no triggerer, the triggerer has
    no users row, or the persona id is 0."""

    missing: MissingPart


class ReservedLineage(_Decided, frozen=True, tag="reserved_lineage"):
    """The persona has lineage 0, which is reserved for global memories."""

    tool_scope: ToolScope


class CreateTargetAmbiguous(_Decided, frozen=True, tag="ambiguous"):
    query: str  # the requested target, trimmed
    candidates: list[str]


class UserNotFound(_Decided, frozen=True, tag="user_not_found"):
    query: str  # the requested target, trimmed
    label: str | None = None  # set: the person resolved to this label, but has no users row


class HostProtected(_Decided, frozen=True, tag="host_protected"):
    label: str
    why: HostProtection


class InvalidContent(_Decided, frozen=True, tag="invalid_content"):
    tool_scope: ToolScope  # the scope the save would have had (not shown: TomoriBot omits it)
    length: int  # UTF-16 code units after cleaning: 0 (empty) or over `limit`
    limit: int


class CreateSecretRefused(_Decided, frozen=True, tag="secret_refused"):
    """The content holds a credential (worker/domain/secret_guard/). Only its kind is kept:
    never the content, which this decision is stored instead of."""

    tool_scope: ToolScope
    kind: CredentialKind


class PrivacyRestricted(_Decided, frozen=True, tag="privacy_restricted"):
    label: str
    level: int


class SavePlan(_Decided, frozen=True, tag="save"):
    """A create that passed every check before persistence; memory_create_batch() does the
    rest under the owner's lock and reads its fields by name (tests/unit/test_sql_arguments.py
    holds the two together)."""

    scope: Scope
    tool_scope: ToolScope
    owner_id: str  # Discord id: the workspace's (server) or the user's (personal)
    user_id: int | None  # internal users.user_id for personal saves
    lineage_id: int
    persona_id: int
    persona_name: str
    content: str
    cap: int
    blocked_by: tuple[EvictionBlocker, ...]  # empty: at the cap a dormant row may be replaced
    decay_days: int
    target_label: str | None
    teacher_id: str | None  # Discord id of the person who caused the turn, when the bot named one
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    notice: NoticeRoute
    # The eviction metric's event id, chosen once before the save (events.py says why it is
    # random); set exactly when a row may be replaced.
    metric_event_id: str | None = None
    # What picks a personal memory's notice footer (worker/domain/tool_texts.py): whether
    # personal memories are on in the workspace, and whether it blacklists the person.
    personalization_enabled: bool = True
    target_blacklisted: bool = False

    @property
    def may_evict(self) -> bool:
        return not self.blocked_by


CreateDecision = (InvalidArgs | Disabled | MissingState | ReservedLineage | CreateTargetAmbiguous | UserNotFound
                  | HostProtected | InvalidContent | PrivacyRestricted | SavePlan | CreateSecretRefused)


class SaveSettled(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a save learned under the owner's lock (memory_create_batch() writes it): how it
    ended, and for a save that wrote the new row's id and after an eviction the forgotten
    row's id and text; for one that ended at a cap, the count read there."""

    outcome: SaveOutcome
    memory_id: int | None = None
    count: int | None = None
    evicted_id: int | None = None
    forgotten: str | None = None
