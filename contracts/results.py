"""The result a command gets (docs/design.md, section 3.4): published to `reply_to`, kept in the inbox."""

from __future__ import annotations

from typing import Any, Final, Literal

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
    """A bot cache entry the command made stale.

    Attributes:
        cache: tomori_state (the workspace's state, with its server memories) or user (a
            user's state, with their personal memories).
        key: The entry's key: the workspace id for tomori_state, the user's Discord id (or a
            proxy identity's synthetic id) for user.
    """

    cache: Literal["tomori_state", "user"]
    key: str


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


# Statuses of memory.update, TomoriBot's update_long_term_memory's own strings (never changed).
MEMORY_UPDATED: Final = "memory_updated_successfully"
MEMORY_DELETED: Final = "memory_deleted_successfully"
UPDATE_INVALID_ARGS: Final = "memory_update_failed_invalid_args"
UPDATE_DISABLED: Final = "memory_update_failed_disabled"
UPDATE_INVALID_CONTENT: Final = "memory_update_failed_invalid_content"
UPDATE_AMBIGUOUS_USER: Final = "memory_update_failed_ambiguous_user"
UPDATE_USER_NOT_FOUND: Final = "memory_update_failed_user_not_found"
UPDATE_INVALID_SCOPE: Final = "memory_update_failed_invalid_scope"
UPDATE_INTERNAL_ERROR: Final = "memory_update_failed_internal_error"
UPDATE_NOT_FOUND: Final = "memory_update_failed_not_found"
UPDATE_INVALID_TARGET: Final = "memory_update_failed_invalid_target"
UPDATE_PRIVACY_RESTRICTED: Final = "memory_update_failed_privacy_restricted"
UPDATE_DB_ERROR: Final = "memory_update_failed_db_error"
UPDATE_ERROR: Final = "memory_update_failed_error"

UPDATE_STATUSES = (
    MEMORY_UPDATED, MEMORY_DELETED, UPDATE_INVALID_ARGS, UPDATE_DISABLED, UPDATE_INVALID_CONTENT,
    UPDATE_AMBIGUOUS_USER, UPDATE_USER_NOT_FOUND, UPDATE_INVALID_SCOPE, UPDATE_INTERNAL_ERROR, UPDATE_NOT_FOUND,
    UPDATE_INVALID_TARGET, UPDATE_PRIVACY_RESTRICTED, UPDATE_DB_ERROR, UPDATE_ERROR,
)

UpdateStatus = Literal[
    "memory_updated_successfully", "memory_deleted_successfully", "memory_update_failed_invalid_args",
    "memory_update_failed_disabled", "memory_update_failed_invalid_content", "memory_update_failed_ambiguous_user",
    "memory_update_failed_user_not_found", "memory_update_failed_invalid_scope",
    "memory_update_failed_internal_error", "memory_update_failed_not_found", "memory_update_failed_invalid_target",
    "memory_update_failed_privacy_restricted", "memory_update_failed_db_error", "memory_update_failed_error",
]


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


# Statuses of memory.manual, memory.reinforce and memory.seed_bio (docs/design.md, section 8).
ADDED: Final = "added"
UPDATED: Final = "updated"
UNCHANGED: Final = "unchanged"
REMOVED: Final = "removed"
PRIVACY_BLOCKED: Final = "privacy-blocked"
HOST_PROTECTED: Final = "host-protected"
EMPTY_CONTENT: Final = "empty-content"
CONTENT_TOO_LONG: Final = "content-too-long"
LIMIT_REACHED: Final = "limit-reached"
BATCH_LIMIT_REACHED: Final = "batch-limit-reached"
ALL_DUPLICATES: Final = "all-duplicates"
NOT_FOUND: Final = "not-found"
BLACKLISTED: Final = "blacklisted"
TEACHING_DISABLED: Final = "teaching-disabled"
IMPORTED: Final = "imported"
MANAGERS_ONLY: Final = "managers-only"
REINFORCED: Final = "reinforced"
SEEDED: Final = "seeded"
SKIPPED: Final = "skipped"
FAILED: Final = "failed"  # the worker gave up on the command after its retries


ManualStatus = Literal[
    "added", "updated", "unchanged", "removed", "privacy-blocked", "host-protected", "empty-content",
    "content-too-long", "limit-reached", "batch-limit-reached", "all-duplicates", "not-found", "blacklisted",
    "teaching-disabled", "failed", "imported", "managers-only",
]
ReinforceStatus = Literal["reinforced", "failed"]
SeedBioStatus = Literal["seeded", "skipped", "failed"]
OpStatus = Literal[ManualStatus, ReinforceStatus, SeedBioStatus]


class OpData(Struct, kw_only=True):
    """`data` of the other commands' results: a status, a reason, and what the status needs.

    Attributes:
        status: What happened (each command kind's result lists its own statuses); failed means
            the worker gave up on the command after its retries.
        reason: Why it was refused, skipped or failed, in words for the person using the panel;
            null when it was done.
        memory_id: The memory added (one row), updated, kept unchanged, removed or seeded.
        memory_ids: added: the ids of every memory added, in order (one for an add); imported:
            the ids of every memory the import added, in entry order (empty when it added none).
        available: batch-limit-reached, and an import's limit-reached: how many more memories
            fit under the cap.
        requested: batch-limit-reached, and an import's limit-reached: how many new memories
            the batch or import held.
        count: reinforced: how many memories were marked as used.
        skipped_duplicates: added: how many entries of the batch were skipped as already saved
            or repeated; imported: how many entries a merge skipped as equal to a stored
            memory or an earlier entry.
        removed_count: imported: how many memories a replace deleted (0 for a merge).
    """

    status: OpStatus
    reason: str | None = None
    memory_id: int | UnsetType = UNSET
    memory_ids: list[int] | UnsetType = UNSET
    available: int | UnsetType = UNSET
    requested: int | UnsetType = UNSET
    count: int | UnsetType = UNSET
    skipped_duplicates: int | UnsetType = UNSET
    removed_count: int | UnsetType = UNSET


class OpResult(Struct, kw_only=True):
    """Result of memory.manual, memory.reinforce and memory.seed_bio.

    Attributes:
        command_id: The command this answers.
        success: True when done, and for a skipped seed (a normal outcome); false for a refusal
            or a failure.
        error: The refusal or failure text (the same as data.reason); null on success.
        data: The status and what it needs.
        invalidated: The bot cache entries the change made stale (tomori_state for server
            memories, user for personal ones): drop them before showing the panel again. Empty
            when nothing changed, and always for reinforcement.
    """

    command_id: str
    success: bool
    error: str | None = None
    data: OpData
    invalidated: list[CacheKey] = []


# The same results with the statuses of one command kind: the schemas a bot validates the
# reply of that kind against (the worker builds and decodes OpResult).
class ManualData(OpData, kw_only=True):
    """`data` of a panel command's result.

    Attributes:
        status: added, updated, unchanged (same text and tags, row already protected), removed,
            imported (with memory_ids, removed_count, skipped_duplicates), or a refusal:
            privacy-blocked, host-protected, empty-content, content-too-long, limit-reached,
            batch-limit-reached, all-duplicates, not-found, blacklisted, teaching-disabled,
            managers-only (an import of server memories by someone who is not a manager);
            failed when the worker gave up.
    """

    status: ManualStatus


class ManualResult(OpResult, kw_only=True):
    """Result of memory.manual."""

    data: ManualData


class ReinforceData(OpData, kw_only=True):
    """`data` of a reinforcement's result.

    Attributes:
        status: reinforced (with count), or failed when the worker gave up.
    """

    status: ReinforceStatus


class ReinforceResult(OpResult, kw_only=True):
    """Result of memory.reinforce."""

    data: ReinforceData


class SeedBioData(OpData, kw_only=True):
    """`data` of a bio seed's result.

    Attributes:
        status: seeded (with memory_id), skipped (reason says why: not a new identity, already
            seeded, blank bio, a protecting host, a full lineage 0), or failed when the worker
            gave up.
    """

    status: SeedBioStatus


class SeedBioResult(OpResult, kw_only=True):
    """Result of memory.seed_bio."""

    data: SeedBioData


class InvalidData(Struct, kw_only=True):
    """`data` of the answer to a command that could not be read.

    Attributes:
        status: Always memory_command_invalid.
        reason: What was wrong with the command, naming the field (a bug in the bot, not the
            user's doing).
    """

    status: Literal["memory_command_invalid"]
    reason: str


class InvalidCommandResult(Struct, kw_only=True):
    """The answer to a command of any kind that could not be decoded or whose envelope is
    invalid; it is dead-lettered with reason invalid_command, never applied.
    A create's reply of this kind also fits the create result.

    Attributes:
        command_id: The command's id as far as it could be read (empty when it could not).
        success: Always false.
        error: What was wrong with the command.
        data: The status memory_command_invalid and the reason.
    """

    command_id: str
    success: Literal[False]
    error: str
    data: InvalidData


ShadowOutcome = Literal["agreed", "differed", "concurrent", "timed_out", "unpaired", "nothing_compared"]


class ShadowDifference(Struct, kw_only=True):
    """One field on which a bot's own write and the worker's dry run disagreed.

    Attributes:
        field: The field's path in the result, dotted (`data.status`, `data.reason`, `notice.footer`).
        worker: The dry run's value (null: absent from its result).
        bot: The bot's value.
    """

    field: str
    worker: Any = None
    bot: Any = None


class ShadowData(Struct, kw_only=True):
    """`data` of a shadow report's result.

    Attributes:
        status: recorded; failed when the worker gave up on the report (it is not recorded).
        outcome: How the pair came out (null when failed): agreed (every field the bot gave is the dry run's),
            differed (a real disagreement: see differences), concurrent (they differ, and an
            insert of the same owner and scope came between the dry run and the bot's own
            write: not comparable), timed_out (the bot had no dry-run answer in time),
            unpaired (no dry run of this command_id by this bot and workspace reached the
            worker), nothing_compared (the bot's result held no field to compare: `{}`,
            `{"data": {}}`; never an agreement).
        differences: The fields that differed, with both values (differed and concurrent); a
            credential is shown as its kind only, and a long value as its size.
    """

    status: Literal["recorded", "failed"]
    outcome: ShadowOutcome | None = None
    differences: list[ShadowDifference] = []


class ShadowResult(Struct, kw_only=True):
    """Result of memory.shadow: how the report was paired with its dry run.

    Attributes:
        command_id: The report this answers.
        success: True once recorded.
        data: The outcome and the differences.
    """

    command_id: str
    success: bool
    data: ShadowData
