"""The result a command gets (docs/design.md, section 3.4): published to `reply_to`, kept in the inbox."""

from __future__ import annotations

from typing import Final, Literal

from msgspec import UNSET, Struct, UnsetType

from .notice import NoticeField

# Statuses the model sees; these strings are TomoriBot's and never change.
SAVED: Final = "memory_saved_successfully"
SAVED_WITH_EVICTION: Final = "memory_saved_with_eviction"
INVALID_ARGS: Final = "memory_save_failed_invalid_args"
DISABLED: Final = "memory_save_failed_disabled"
INTERNAL_ERROR: Final = "memory_save_failed_internal_error"
AMBIGUOUS_USER: Final = "memory_save_failed_ambiguous_user"
USER_NOT_FOUND: Final = "memory_save_failed_user_not_found"
INVALID_CONTENT: Final = "memory_save_failed_invalid_content"
PRIVACY_RESTRICTED: Final = "memory_save_failed_privacy_restricted"
LIMIT_EXCEEDED: Final = "memory_save_failed_limit_exceeded"
DB_ERROR: Final = "memory_save_failed_db_error"
COMMAND_INVALID: Final = "memory_command_invalid"

CREATE_STATUSES = (
    SAVED, SAVED_WITH_EVICTION, INVALID_ARGS, DISABLED, INTERNAL_ERROR, AMBIGUOUS_USER,
    USER_NOT_FOUND, INVALID_CONTENT, PRIVACY_RESTRICTED, LIMIT_EXCEEDED, DB_ERROR,
)


CreateStatus = Literal[
    "memory_saved_successfully", "memory_saved_with_eviction", "memory_save_failed_invalid_args",
    "memory_save_failed_disabled", "memory_save_failed_internal_error", "memory_save_failed_ambiguous_user",
    "memory_save_failed_user_not_found", "memory_save_failed_invalid_content",
    "memory_save_failed_privacy_restricted", "memory_save_failed_limit_exceeded", "memory_save_failed_db_error",
    "memory_command_invalid",
]


class CacheKey(Struct, frozen=True):
    cache: Literal["tomori_state", "user"]
    key: str


class ResultData(Struct, kw_only=True):
    status: CreateStatus
    scope: str | None = None
    memory_id: int | None = None
    content_saved: str | None = None
    content_forgotten: str | None = None
    reason: str | None = None
    # Present only where the status calls for them.
    candidates: list[str] | UnsetType = UNSET
    current_count: int | UnsetType = UNSET
    max_allowed: int | UnsetType = UNSET
    target_user: str | UnsetType = UNSET


class CommandResult(Struct, kw_only=True):
    command_id: str
    success: bool
    message: str | None = None
    error: str | None = None
    data: ResultData
    invalidated: list[CacheKey] = []
    notice: NoticeField = None


# Statuses of memory.manual, memory.reinforce and memory.seed_bio (docs/design.md, section 8).
ADDED = "added"
UPDATED = "updated"
UNCHANGED = "unchanged"
REMOVED = "removed"
PRIVACY_BLOCKED = "privacy-blocked"
HOST_PROTECTED = "host-protected"
EMPTY_CONTENT = "empty-content"
CONTENT_TOO_LONG = "content-too-long"
LIMIT_REACHED = "limit-reached"
BATCH_LIMIT_REACHED = "batch-limit-reached"
ALL_DUPLICATES = "all-duplicates"
NOT_FOUND = "not-found"
BLACKLISTED = "blacklisted"
TEACHING_DISABLED = "teaching-disabled"
REINFORCED = "reinforced"
SEEDED = "seeded"
SKIPPED = "skipped"
FAILED = "failed"  # the worker gave up on the command after its retries


ManualStatus = Literal[
    "added", "updated", "unchanged", "removed", "privacy-blocked", "host-protected", "empty-content",
    "content-too-long", "limit-reached", "batch-limit-reached", "all-duplicates", "not-found", "blacklisted",
    "teaching-disabled", "failed",
]
ReinforceStatus = Literal["reinforced", "failed"]
SeedBioStatus = Literal["seeded", "skipped", "failed"]
OpStatus = Literal[ManualStatus, ReinforceStatus, SeedBioStatus]


class OpData(Struct, kw_only=True):
    """`data` of the other commands' results: a status, a reason, and what the status needs."""

    status: OpStatus
    reason: str | None = None
    memory_id: int | UnsetType = UNSET
    memory_ids: list[int] | UnsetType = UNSET
    available: int | UnsetType = UNSET
    requested: int | UnsetType = UNSET
    count: int | UnsetType = UNSET
    skipped_duplicates: int | UnsetType = UNSET


class OpResult(Struct, kw_only=True):
    """Result of memory.manual, memory.reinforce and memory.seed_bio."""

    command_id: str
    success: bool
    error: str | None = None
    data: OpData
    invalidated: list[CacheKey] = []


# The same results with the statuses of one command kind: the schemas a bot validates the
# reply of that kind against (the worker builds and decodes OpResult).
class ManualData(OpData, kw_only=True):
    status: ManualStatus


class ManualResult(OpResult, kw_only=True):
    """Result of memory.manual."""

    data: ManualData


class ReinforceData(OpData, kw_only=True):
    status: ReinforceStatus


class ReinforceResult(OpResult, kw_only=True):
    """Result of memory.reinforce."""

    data: ReinforceData


class SeedBioData(OpData, kw_only=True):
    status: SeedBioStatus


class SeedBioResult(OpResult, kw_only=True):
    """Result of memory.seed_bio."""

    data: SeedBioData


class InvalidData(Struct, kw_only=True):
    status: Literal["memory_command_invalid"]
    reason: str


class InvalidCommandResult(Struct, kw_only=True):
    """The answer to a command of any kind that could not be decoded or whose envelope is
    invalid (docs/design.md, section 3.2); it is dead-lettered with reason invalid_command, never applied.
    A create's reply of this kind also fits the create result."""

    command_id: str
    success: Literal[False]
    error: str
    data: InvalidData
