"""What the results of several command kinds share: the cache keys a change made stale, the answer
to a command that could not be read, and the fields of the panels', reinforcements' and bio
seeds' results."""

from __future__ import annotations

from typing import Final, Literal

from msgspec import UNSET, Struct, UnsetType

# The status of a command that could not be read, of any kind (a create's result has it too).
CommandInvalid = Literal["memory_command_invalid"]
COMMAND_INVALID: Final[CommandInvalid] = "memory_command_invalid"
# The worker gave up on the command after its retries: a status of every kind but the tool calls.
Failed = Literal["failed"]
FAILED: Final[Failed] = "failed"


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


class InvalidData(Struct, kw_only=True):
    """`data` of the answer to a command that could not be read.

    Attributes:
        status: Always memory_command_invalid.
        reason: What was wrong with the command, naming the field (a bug in the bot, not the
            user's doing).
    """

    status: CommandInvalid
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


class OpDataBase(Struct, kw_only=True):
    """The fields of `data` in the results of memory.manual, memory.reinforce and memory.seed_bio:
    each kind's data (and OpData, which the worker builds) narrows status to its statuses.

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

    status: str
    reason: str | None = None
    memory_id: int | UnsetType = UNSET
    memory_ids: list[int] | UnsetType = UNSET
    available: int | UnsetType = UNSET
    requested: int | UnsetType = UNSET
    count: int | UnsetType = UNSET
    skipped_duplicates: int | UnsetType = UNSET
    removed_count: int | UnsetType = UNSET


class OpResultBase(Struct, kw_only=True):
    """The fields of the results of memory.manual, memory.reinforce and memory.seed_bio: each kind's
    result (and OpResult, which the worker builds) narrows data to its own.

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
    data: OpDataBase
    invalidated: list[CacheKey] = []
