"""A memory.update's decision as its inbox row stores it, what it learned under the owner lock,
and the rule that settles it there.

The pure decision (worker/kinds/update/decision.py) ends in one of these values: a refusal decided
before the lock, or the `UpdatePlan` of an edit or a delete. worker/kinds/update/service.py
stores it as it is (processed_commands.decision) with, for a plan, the `UpdateSettled` only the
locked transaction knows (processed_commands.facts): how it ended (`settle_update`), and the
row's text before, lineage, source and protection. Nothing else is kept: the reply, every
repeat, the result lookup's answer (worker/kinds/update/rendering.py) and the events
(worker/domain/events.py) are rendered from the two, the same way every time.

A decision holds values, not words. Its JSON is the stored format
(tests/unit/test_update_decision.py holds a stored example of each kind to what it renders),
so fields are only ever added, with defaults. Its `decided` tags are its own: a create's
decision is another union (worker/kinds/create/record.py), and which one a row holds is
read off the row's kind (db/inbox.py, decode_inbox_row).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import msgspec

from contracts.events import Source
from worker.domain.notice import NoticeRoute
from worker.domain.people import Privacy, ProxyIdentity
from worker.domain.proxy import HostProtection, host_protection
from worker.domain.scope import Scope
from worker.domain.secret_guard import CredentialKind
from worker.domain.tool_arguments import ParameterCheck

__all__ = [
    "UpdateTargetAmbiguous",
    "BotTarget",
    "BridgeTarget",
    "Disabled",
    "InvalidArgument",
    "InvalidContent",
    "InvalidParameters",
    "LockedMemory",
    "LockedTarget",
    "MissingServerContext",
    "NotMember",
    "UpdateDecision",
    "UpdateSettled",
    "UpdateOutcome",
    "UpdatePlan",
    "UpdateRecord",
    "UserNotFound",
    "settle_update",
]


class _Decided(msgspec.Struct, frozen=True, tag_field="decided"):
    """The stored union's base: its `decided` key names the member."""


class InvalidParameters(_Decided, frozen=True, tag="invalid_parameters"):
    """BaseTool.validateParameters refused the declared parameters, or (the worker's, as the
    create's) a legacy target name held something else than a string: the create's
    `ParameterCheck` (worker/domain/tool_arguments.py)."""

    check: ParameterCheck


class InvalidArgument(_Decided, frozen=True, tag="invalid_argument"):
    """A value the tool's own checks refuse: memory_id (not a positive safe integer),
    memory_content (not a string), and the worker's: nul (a NUL character in `parameter`)."""

    problem: Literal["memory_id", "memory_content", "nul"]
    parameter: str = ""


class Disabled(_Decided, frozen=True, tag="disabled"):
    """Self-teaching is off in the workspace."""


class InvalidContent(_Decided, frozen=True, tag="invalid_content"):
    length: int  # UTF-16 code units after cleaning: over `limit`
    limit: int


class UpdateSecretRefused(_Decided, frozen=True, tag="secret_refused"):
    """The new content holds a credential (worker/domain/secret_guard/). Only its kind is kept:
    never the content, which this decision is stored instead of."""

    kind: CredentialKind


class UpdateTargetAmbiguous(_Decided, frozen=True, tag="ambiguous"):
    query: str
    candidates: list[str]


class UserNotFound(_Decided, frozen=True, tag="user_not_found"):
    query: str
    label: str | None = None  # set: the person matched, but has no users row


class BridgeTarget(_Decided, frozen=True, tag="bridge_target"):
    """The target is a Matrix bridge user: they have no personal memories."""


class MissingServerContext(_Decided, frozen=True, tag="missing_server_context"):
    """The command's persona id is 0: TomoriBot's `!tomoriState.persona_id`."""


class BotTarget(_Decided, frozen=True, tag="bot_target"):
    """The target is the bot itself."""


class NotMember(_Decided, frozen=True, tag="not_member"):
    """The target is not in this guild (`dm` false) or, in a DM, is not the person talking."""

    dm: bool


class UpdatePlan(_Decided, frozen=True, tag="plan"):
    """An edit (`content` set) or a delete (`content` None) that passed every check before the
    lock; the locked transaction settles it (`settle_update`)."""

    scope: Scope
    owner_id: str  # Discord id: the workspace's (server) or the target's (personal)
    user_id: int | None  # the target's users.user_id (personal)
    memory_id: int
    content: str | None  # the new text, sanitized; None deletes the memory
    lineage_id: int  # the persona's: server rows of exactly it, personal rows of it or lineage 0
    persona_name: str
    target_label: str | None  # the resolved label (personal)
    in_guild: bool  # the footer's blacklist test applies in a guild only
    personal_memories_enabled: bool  # the footer's personalization test
    proxy: bool  # a proxy identity: its hosts are read under the lock
    notice: NoticeRoute

    @property
    def deletes(self) -> bool:
        return self.content is None


UpdateDecision = (InvalidParameters | InvalidArgument | Disabled | InvalidContent | UpdateSecretRefused | UpdateTargetAmbiguous
                  | UserNotFound | BridgeTarget | MissingServerContext | BotTarget | NotMember | UpdatePlan)


class UpdateOutcome(StrEnum):
    """How a plan ended under the owner lock."""

    UPDATED = "updated"
    DELETED = "deleted"
    NOT_FOUND = "not_found"  # no such memory within the owner and lineage
    PRIVACY_PARTIAL = "privacy_partial"  # an edit of a user at privacy level 1
    PRIVACY_FULL = "privacy_full"  # an edit of a user at any other level but 0, or with no users row left
    HOST_PROTECTED = "host_protected"  # an edit of a proxy identity a host protects


class UpdateSettled(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a plan learned under the lock: how it ended, and for a memory it changed, what the
    row was (its text before, lineage, source, protection) and whether the footer names the
    target as blacklisted; for a host-protected edit, why."""

    outcome: UpdateOutcome
    content_before: str | None = None
    lineage_id: int | None = None
    source: Source | None = None
    manually_written: bool | None = None
    blacklisted: bool = False
    host: HostProtection | None = None


class UpdateRecord(msgspec.Struct, frozen=True):
    """An update's inbox row, decoded: its decision and, for a plan, how it was settled under the lock."""

    decision: UpdateDecision
    settled: UpdateSettled | None = None


@dataclass(frozen=True, slots=True)
class LockedMemory:
    """The memory a plan names, read under the lock."""

    lineage_id: int
    content: str
    source: Source
    manually_written: bool


@dataclass(frozen=True, slots=True)
class LockedTarget:
    """What the locked transaction reads for a plan: the memory (None: not within the owner and
    lineage) and, for a personal one, the user's privacy level (None: no users row any more),
    whether this workspace blacklists them, and a proxy identity's hosts."""

    memory: LockedMemory | None
    privacy_level: int | None = Privacy.OPEN
    blacklisted: bool = False
    identity: ProxyIdentity | None = None  # set when the plan is a proxy identity's


def settle_update(plan: UpdatePlan, locked: LockedTarget) -> UpdateSettled:
    """TomoriBot's checks after the target's membership, in its order, on what holds under the
    lock: an edit (never a delete) of a personal memory is refused for the user's privacy
    (1 or 2; any other level but 0, or a vanished users row, reads as full: fail closed), then
    for a host protecting a proxy identity; then the memory must exist."""
    if plan.scope == "personal" and not plan.deletes:
        if locked.privacy_level != Privacy.OPEN:
            partial = locked.privacy_level == Privacy.PARTIAL
            return UpdateSettled(UpdateOutcome.PRIVACY_PARTIAL if partial else UpdateOutcome.PRIVACY_FULL)
        if plan.proxy and (why := host_protection(locked.identity)) is not None:
            return UpdateSettled(UpdateOutcome.HOST_PROTECTED, host=why)
    memory = locked.memory
    if memory is None:
        return UpdateSettled(UpdateOutcome.NOT_FOUND)
    protected = plan.proxy and host_protection(locked.identity) is not None
    return UpdateSettled(UpdateOutcome.DELETED if plan.deletes else UpdateOutcome.UPDATED,
                       content_before=memory.content, lineage_id=memory.lineage_id, source=memory.source,
                       manually_written=memory.manually_written,
                       blacklisted=plan.scope == "personal" and plan.in_guild and (locked.blacklisted or protected))
