"""The result a command gets (DESIGN.md section 3.4): published to `reply_to`, kept in the inbox."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType

# Statuses the model sees; these strings are TomoriBot's and never change.
SAVED = "memory_saved_successfully"
SAVED_WITH_EVICTION = "memory_saved_with_eviction"
INVALID_ARGS = "memory_save_failed_invalid_args"
DISABLED = "memory_save_failed_disabled"
INTERNAL_ERROR = "memory_save_failed_internal_error"
AMBIGUOUS_USER = "memory_save_failed_ambiguous_user"
USER_NOT_FOUND = "memory_save_failed_user_not_found"
INVALID_CONTENT = "memory_save_failed_invalid_content"
PRIVACY_RESTRICTED = "memory_save_failed_privacy_restricted"
LIMIT_EXCEEDED = "memory_save_failed_limit_exceeded"
DB_ERROR = "memory_save_failed_db_error"
COMMAND_INVALID = "memory_command_invalid"

CREATE_STATUSES = (
    SAVED, SAVED_WITH_EVICTION, INVALID_ARGS, DISABLED, INTERNAL_ERROR, AMBIGUOUS_USER,
    USER_NOT_FOUND, INVALID_CONTENT, PRIVACY_RESTRICTED, LIMIT_EXCEEDED, DB_ERROR,
)


class CacheKey(Struct, frozen=True):
    cache: str
    key: str


class ResultData(Struct, kw_only=True):
    status: str
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
    notice: dict[str, Any] | None = None
