"""`memory.update`: the model's update_long_term_memory tool call, its result and its statuses."""

from __future__ import annotations

from typing import Final, Literal, get_args

from msgspec import UNSET, Struct, UnsetType

from ..notice import NoticeField
from ..result_parts import CacheKey
from ..tool_call import ToolCall


class UpdateMemory(ToolCall, kw_only=True, frozen=True):
    """`memory.update`: the model's `update_long_term_memory` tool call. It replaces the text of
    the memory the model names by the id it was shown (`ID:N`), or deletes that memory when
    memory_content is blank. Answered in TomoriBot's words and statuses (docs/design.md,
    section 8.4).

    Attributes:
        tool_args: The model's arguments exactly as it gave them, decoded from the provider's
            argument string into a JSON object: memory_id (a number: the N of `ID:N`),
            memory_content (the full new text; blank deletes the memory) and, for a personal
            memory, target_user (legacy names target_user_nickname and target_user_discord_id
            are read too). Not validated on decoding: bad arguments are answered with
            memory_update_failed_invalid_args naming the parameter.
        persona: The speaking persona. A server memory is found only within its lineage, a
            personal one within its lineage or the user's global memories (lineage 0). id 0
            is refused (memory_update_failed_internal_error, "Missing server context").
        bot_user_id: The bot's own Discord user id: a target_user that resolves to it is
            refused (memory_update_failed_invalid_target).
        triggerer: Who caused the turn. In a DM the target_user must be them, or the update is
            refused (memory_update_failed_invalid_scope).
        channel: Where the tool call happened: where the notice goes, whether the thought log
            gets a copy, and (is_dm) which membership rule a target_user is held to.
        participants: The people of the conversation the model may name (what the bot listed to
            the model), checked first when resolving target_user.
        member_matches: The guild's members the target_user may be: the bot's member search
            for the target_user text, and every participant who is a member of the guild now
            (discord.js `guild.members.cache.get(id)`, else `guild.members.fetch(id)`). In a
            guild a target_user whose id is not among them (a participant who left, say) is
            refused as not in this server (memory_update_failed_invalid_scope), as TomoriBot
            refuses a target it cannot fetch from the guild; a proxy identity is exempt. Not
            read in a DM or without a target_user, so it may be left empty there.
    """


# Statuses of memory.update, TomoriBot's update_long_term_memory's own strings (never changed).
UpdateStatus = Literal[
    "memory_updated_successfully",
    "memory_deleted_successfully",
    "memory_update_failed_invalid_args",
    "memory_update_failed_disabled",
    "memory_update_failed_invalid_content",
    "memory_update_failed_ambiguous_user",
    "memory_update_failed_user_not_found",
    "memory_update_failed_invalid_scope",
    "memory_update_failed_internal_error",
    "memory_update_failed_not_found",
    "memory_update_failed_invalid_target",
    "memory_update_failed_privacy_restricted",
    "memory_update_failed_db_error",
    "memory_update_failed_error",
]
UPDATE_STATUSES: tuple[UpdateStatus, ...] = get_args(UpdateStatus)
MEMORY_UPDATED: Final[UpdateStatus] = "memory_updated_successfully"
MEMORY_DELETED: Final[UpdateStatus] = "memory_deleted_successfully"
UPDATE_INVALID_ARGS: Final[UpdateStatus] = "memory_update_failed_invalid_args"
UPDATE_DISABLED: Final[UpdateStatus] = "memory_update_failed_disabled"
UPDATE_INVALID_CONTENT: Final[UpdateStatus] = "memory_update_failed_invalid_content"
UPDATE_AMBIGUOUS_USER: Final[UpdateStatus] = "memory_update_failed_ambiguous_user"
UPDATE_USER_NOT_FOUND: Final[UpdateStatus] = "memory_update_failed_user_not_found"
UPDATE_INVALID_SCOPE: Final[UpdateStatus] = "memory_update_failed_invalid_scope"
UPDATE_INTERNAL_ERROR: Final[UpdateStatus] = "memory_update_failed_internal_error"
UPDATE_NOT_FOUND: Final[UpdateStatus] = "memory_update_failed_not_found"
UPDATE_INVALID_TARGET: Final[UpdateStatus] = "memory_update_failed_invalid_target"
UPDATE_PRIVACY_RESTRICTED: Final[UpdateStatus] = "memory_update_failed_privacy_restricted"
UPDATE_ERROR: Final[UpdateStatus] = "memory_update_failed_error"


class UpdateData(Struct, kw_only=True):
    """`data` of a memory.update's result, in the words of TomoriBot's update_long_term_memory
    tool (give it to the model as is). The keys TomoriBot's tool adds only in some cases are
    present only in those cases.

    Attributes:
        status: What happened, one of TomoriBot's own status strings: memory_updated_successfully,
            memory_deleted_successfully, or a memory_update_failed_* refusal. Statuses are only
            ever added.
        scope: On success, the memory's scope in the tool's words: server_wide (no target_user)
            or target_user; null on a failure, where TomoriBot's tool names none.
        memory_id: On success, the id of the memory updated or deleted; null on a failure.
        content_saved: memory_updated_successfully only: the new text as stored, after
            sanitizing (only the {user}, {bot} and {char} placeholders survive).
        content_deleted: memory_deleted_successfully only: the text the deleted memory had.
        target_user: On a personal success only: the name the target was resolved to.
        reason: Why it failed, in TomoriBot's words; null on success.
        candidates: memory_update_failed_ambiguous_user only: up to 3 labels of the people the
            name matched, for the model to ask which one is meant.
    """

    status: UpdateStatus
    scope: Literal["server_wide", "target_user"] | None = None
    memory_id: int | None = None
    content_saved: str | UnsetType = UNSET
    content_deleted: str | UnsetType = UNSET
    target_user: str | UnsetType = UNSET
    reason: str | None = None
    candidates: list[str] | UnsetType = UNSET


class UpdateResult(Struct, kw_only=True):
    """The result of `memory.update`, published to reply_to and kept for the result lookup: the
    shape of a create's result. Every repeat of the command_id gets the same answer.

    Attributes:
        command_id: The command this answers.
        success: True when the memory was updated or deleted.
        message: On success, TomoriBot's message: "Server memory updated successfully",
            "Server memory deleted successfully", "Personal memory updated successfully" or
            "Personal memory deleted successfully"; null otherwise.
        error: The failure text, TomoriBot's (it may differ from data.reason, as TomoriBot's
            does); null on success.
        data: The status and its details: the tool result the model sees.
        invalidated: The bot cache entries the change made stale. Drop them from the bot's own
            caches before posting the notice; the same keys are also published as
            cache.invalidate events for other processes. Empty for a refusal.
        notice: Where the memory_update notice goes and what it shows (the notice plan, with
            its embed: TomoriBot's updated or deleted notice), set on success and null for a
            refusal. The bot renders and posts it; a failed post never undoes the change.
    """

    command_id: str
    success: bool
    message: str | None = None
    error: str | None = None
    data: UpdateData
    invalidated: list[CacheKey] = []
    notice: NoticeField = None
