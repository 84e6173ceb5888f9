"""`memory.create`: the model's create_long_term_memory tool call, its result and its statuses."""

from __future__ import annotations

from typing import Final, Literal, get_args

from msgspec import UNSET, Struct, UnsetType

from ..fields import ShortText
from ..notice import NoticeField
from ..result_parts import CacheKey, CommandInvalid
from ..tool_call import ToolCall


class Retrieval(Struct, frozen=True, kw_only=True):
    """How the bot retrieves memories in this turn. At the cap, a save may replace a dormant
    memory only when retrieval picks memories by relevance (all three are set) and the
    workspace has memory decay on; otherwise it is refused with memory_save_failed_limit_exceeded.

    Attributes:
        rag_available: True when the bot retrieves memories by relevance (embeddings) in this
            workspace rather than showing the model every memory.
        embedding_model: The embedding model in use; null or blank counts as none.
        embedding_credentials: True when the bot has credentials for that embedding model.
    """

    rag_available: bool = False
    embedding_model: ShortText | None = None
    embedding_credentials: bool = False


class CreateMemory(ToolCall, kw_only=True, frozen=True):
    """`memory.create`: the model's `create_long_term_memory` tool call.

    Attributes:
        tool_args: The model's arguments exactly as it gave them, decoded from the provider's
            argument string into a JSON object: memory_content, memory_scope (server_wide or
            target_user) and, for target_user, target_user (legacy names target_user_nickname
            and target_user_discord_id are read too). Not validated on decoding: bad arguments
            are answered with memory_save_failed_invalid_args naming the parameter.
        persona: The speaking persona: whose lineage the memory joins.
        bot_user_id: The bot's own Discord user id: a target that resolves to it (or that
            resolves to anyone when target_user is the word self) makes the memory server-wide
            instead of personal.
        triggerer: Who caused the turn, with a users row (recorded as the teacher of a server
            memory); null, or a triggerer without a users row, is refused with
            memory_save_failed_internal_error.
        channel: Where the tool call happened: where the notice goes and whether the thought log
            gets a copy.
        participants: The conversation's user references the model may name (TomoriBot's
            participant target index), checked first when resolving target_user.
        member_matches: The guild members the bot found for the target_user text (see
            MemberMatch). Not read in a DM or for a server_wide save, so it may be left empty
            there.
        retrieval: How memories are retrieved in this turn: whether a save at the cap may
            replace a dormant memory.
    """

    retrieval: Retrieval = Retrieval()


# Statuses the model sees; these strings are TomoriBot's and never change. A create that could
# not be read is answered memory_command_invalid in the same result.
SaveStatus = Literal[
    "memory_saved_successfully",
    "memory_saved_with_eviction",
    "memory_save_failed_invalid_args",
    "memory_save_failed_disabled",
    "memory_save_failed_internal_error",
    "memory_save_failed_ambiguous_user",
    "memory_save_failed_user_not_found",
    "memory_save_failed_invalid_content",
    "memory_save_failed_privacy_restricted",
    "memory_save_failed_limit_exceeded",
    "memory_save_failed_db_error",
]
CreateStatus = Literal[SaveStatus, CommandInvalid]
CREATE_STATUSES: tuple[SaveStatus, ...] = get_args(SaveStatus)
SAVED: Final[SaveStatus] = "memory_saved_successfully"
SAVED_WITH_EVICTION: Final[SaveStatus] = "memory_saved_with_eviction"
INVALID_ARGS: Final[SaveStatus] = "memory_save_failed_invalid_args"
DISABLED: Final[SaveStatus] = "memory_save_failed_disabled"
INTERNAL_ERROR: Final[SaveStatus] = "memory_save_failed_internal_error"
AMBIGUOUS_USER: Final[SaveStatus] = "memory_save_failed_ambiguous_user"
USER_NOT_FOUND: Final[SaveStatus] = "memory_save_failed_user_not_found"
INVALID_CONTENT: Final[SaveStatus] = "memory_save_failed_invalid_content"
PRIVACY_RESTRICTED: Final[SaveStatus] = "memory_save_failed_privacy_restricted"
LIMIT_EXCEEDED: Final[SaveStatus] = "memory_save_failed_limit_exceeded"
DB_ERROR: Final[SaveStatus] = "memory_save_failed_db_error"


class ResultData(Struct, kw_only=True):
    """`data` of a create's result, in the words of the model's tool (give it to the model as is).

    Attributes:
        status: What happened, one of TomoriBot's own status strings: memory_saved_successfully,
            memory_saved_with_eviction, or a memory_save_failed_* refusal (memory_command_invalid
            when the command itself could not be read). Statuses are only ever added.
        scope: The scope the save ended in, in the tool's words: server_wide or target_user (a
            target_user save about the bot or a bridge user ends server_wide); null when it was not
            known (bad arguments, a failure before the arguments were read).
        memory_id: The saved memory's id (server_memory_id or personal_memory_id); null unless
            saved.
        content_saved: The text stored, after sanitizing (only the {user}, {bot} and {char}
            placeholders survive; a bridge user's {user} is replaced by their name); null unless
            saved.
        content_forgotten: With memory_saved_with_eviction, the text of the dormant memory that
            was forgotten to make room; null otherwise.
        reason: Why it failed, worded for the model to relay to the user (what happened and
            what they can do: /memories, /personal memories, /personal config); the same text
            as error. null on success.
        candidates: memory_save_failed_ambiguous_user only: up to 3 labels of the people the
            name matched, for the model to ask which one is meant.
        current_count: memory_save_failed_limit_exceeded only: how many memories the owner
            has in this lineage.
        max_allowed: memory_save_failed_limit_exceeded only: the owner's cap.
        target_user: For a personal save, and for refusals about a target: the name the target
            was resolved to (or the name the model gave, when nobody matched).
    """

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
    """The result of `memory.create`, published to reply_to and kept for the result lookup;
    every repeat of the command_id gets these same bytes.

    Attributes:
        command_id: The command this answers.
        success: True when the memory was saved (with or without an eviction).
        message: "Memory saved successfully" on success; null otherwise.
        error: The failure text (the same as data.reason); null on success.
        data: The status and its details: the tool result the model sees.
        invalidated: The bot cache entries the save made stale. Drop them from the bot's own
            caches before posting the notice, so the next turn sees the new memory; the same keys
            are also published as cache.invalidate events for other processes. Empty for a
            refusal.
        notice: Where the memory_update notice goes and what it shows (the notice plan), set for a
            save and null for a refusal. The bot renders and posts it; a failed post never undoes
            the save.
    """

    command_id: str
    success: bool
    message: str | None = None
    error: str | None = None
    data: ResultData
    invalidated: list[CacheKey] = []
    notice: NoticeField = None
