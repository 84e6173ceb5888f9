"""Events the worker publishes after a command's commit (docs/design.md, section 3.5)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from .notice import NoticeField

Scope = Literal["server", "personal"]
Source = Literal["model", "manual", "import", "legacy", "bio_seed"]
OccurredAt = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]


class EvictedMemory(Struct, frozen=True):
    """The memory a save forgot to make room.

    Attributes:
        memory_id: The forgotten memory's id (it no longer exists).
        content: Its text.
    """

    memory_id: int
    content: str


class MemorySaved(Struct, kw_only=True):
    """A memory was written: a model save, a panel add or edit, or a bio seed.

    Attributes:
        event_id: The event's id, also its Nats-Msg-Id header: derived from the command id, so
            a retried command re-emits the same ids; de-duplicate redeliveries by it.
        command_id: The command that caused the event.
        occurred_at: When the worker processed the command (RFC 3339, UTC).
        scope: server or personal: the memory's table.
        workspace_id: The workspace the command came from.
        owner_id: Whose memory it is: the workspace id for a server memory, the user's Discord id
            (or a proxy identity's synthetic id) for a personal one.
        lineage_id: The memory's lineage (0: a user's global memory, such as a bio seed).
        memory_id: The memory's id (server_memory_id or personal_memory_id).
        content: Its text as stored.
        source: Where it came from, unchanged by later edits: model (a tool call), manual (a
            panel), import, legacy (a row from before the worker), bio_seed.
        manually_written: True when a person wrote or last edited it: such a memory is never
            evicted.
        evicted: The memory this save forgot to make room; null when none was.
        notice: For a model save, the same notice plan as the result's; null for panel writes
            and seeds, which show no notice.
    """

    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    workspace_id: str
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str
    source: Source
    manually_written: bool
    evicted: EvictedMemory | None = None
    notice: NoticeField = None


class MemoryUpdated(Struct, kw_only=True):
    """A memory's text was replaced by the model (the update_long_term_memory tool): the same
    memory, its new text. Its tags, source and protection are unchanged.

    Attributes:
        event_id: The event's id, also its Nats-Msg-Id header: derived from the command id, so
            a retried command re-emits the same ids; de-duplicate redeliveries by it.
        command_id: The command that caused the event.
        occurred_at: When the worker processed the command (RFC 3339, UTC).
        scope: server or personal: the memory's table.
        workspace_id: The workspace the command came from.
        owner_id: Whose memory it is: the workspace id for a server memory, the user's Discord id
            (or a proxy identity's synthetic id) for a personal one.
        lineage_id: The memory's lineage (0: a user's global memory).
        memory_id: The memory's id (server_memory_id or personal_memory_id).
        content: Its new text as stored.
        content_before: The text it had before.
        source: Where the memory came from, unchanged by the edit: model, manual, import, legacy,
            bio_seed.
        manually_written: Unchanged by a model's edit: true when a person wrote or last edited
            it, which keeps it from being evicted.
        notice: The same notice plan as the result's.
    """

    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    workspace_id: str
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str
    content_before: str
    source: Source
    manually_written: bool
    notice: NoticeField = None


class MemoryRemoved(Struct, kw_only=True):
    """A memory was removed: from a panel, or by the model (a blank update_long_term_memory).

    Attributes:
        event_id: The event's id, also its Nats-Msg-Id header: derived from the command id, so
            a retried command re-emits the same ids; de-duplicate redeliveries by it.
        command_id: The command that caused the event.
        occurred_at: When the worker processed the command (RFC 3339, UTC).
        scope: server or personal: the memory's table.
        owner_id: Whose memory it was: the workspace id (server) or the user's id (personal).
        lineage_id: Its lineage.
        memory_id: The removed memory's id.
        content: Its text.
    """

    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    owner_id: str
    lineage_id: int
    memory_id: int
    content: str


class MemoryEvicted(Struct, kw_only=True):
    """A dormant memory was forgotten to make room for a model save at the cap.

    Attributes:
        event_id: The event's id, also its Nats-Msg-Id header: derived from the command id, so
            a retried command re-emits the same ids; de-duplicate redeliveries by it.
        command_id: The command that caused the event.
        occurred_at: When the worker processed the command (RFC 3339, UTC).
        scope: server or personal: the memory's table.
        owner_id: Whose memory it was: the workspace id (server) or the user's id (personal).
        lineage_id: Its lineage (the saving persona's; lineage 0 is never evicted).
        memory_id: The forgotten memory's id.
        content_forgotten: Its text.
        replaced_by: The id of the memory saved in its place.
        decay_days: The workspace's dormancy period: the forgotten memory had not been used
            (reinforced, or created) for longer than this.
    """

    event_id: str
    command_id: str
    occurred_at: OccurredAt
    scope: Scope
    owner_id: str
    lineage_id: int
    memory_id: int
    content_forgotten: str
    replaced_by: int
    decay_days: int


class CacheInvalidate(Struct, kw_only=True):
    """Drop this bot cache entry: published before the same command's memory.saved (or
    memory.updated, memory.removed), so a cache node that applies it first never serves the
    value from before the change.

    Attributes:
        event_id: The event's id, also its Nats-Msg-Id header: derived from the command id, so
            a retried command re-emits the same ids; de-duplicate redeliveries by it.
        command_id: The command that caused the event.
        occurred_at: When the worker processed the command (RFC 3339, UTC).
        cache: tomori_state (a workspace's state, with its server memories) or user (a user's
            state, with their personal memories).
        key: The entry: the workspace id (tomori_state) or the user's id (user).
        reason: What changed: memory_saved (a model save), memory_updated or memory_deleted (a
            model's update_long_term_memory), memory_add, memory_add_batch, memory_edit,
            memory_remove (a panel) or bio_seeded.
    """

    event_id: str
    command_id: str
    occurred_at: OccurredAt
    cache: Literal["tomori_state", "user"]
    key: str
    reason: str


class MemoryEvictionMetric(Struct, kw_only=True, forbid_unknown_fields=True):
    """Exactly these two fields: no content, no ids. The event id rides in the Nats-Msg-Id
    header and is opaque: it leads back to no command, workspace or content.

    Attributes:
        scope: server or personal: which kind of memory was evicted.
        decay_days: The dormancy period it was evicted under.
    """

    scope: Scope
    decay_days: Annotated[int, Meta(ge=1)]
