"""`memory.manual`: the /memories and /personal memories panels, their result and statuses."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import Meta, Struct

from ..envelope import Envelope
from ..fields import NO_NUL, DiscordId, Int32, LineageId, MemoryId, MemoryScope, PanelText, ShortText, SyntheticId
from ..result_parts import Failed, OpDataBase, OpResultBase

# Tags as a panel takes them: raw comma-separated text or a list (worker/domain/tags.py parses both).
PanelTags = Annotated[str, Meta(max_length=2000, pattern=NO_NUL)] | Annotated[list[ShortText], Meta(max_length=100)]
# An import holds at most this many entries (more than any cap a deployment sets in practice);
# the command as a whole must also fit the worker's MAX_COMMAND_BYTES.
MAX_IMPORT_ENTRIES = 2000


class Actor(Struct, frozen=True, kw_only=True):
    """The person using the panel.

    Attributes:
        id: Their Discord user id. Personal memories are theirs (unless identity_id is set), and
            server memories they add are recorded as taught by them.
        is_manager: True when they have Manage Server in this guild, and always in a DM.
            Managers see and change every server memory and may teach when member teaching is
            off; others see and change only the server memories they taught.
    """

    id: DiscordId
    # ManageGuild in a server; anyone in a DM.
    is_manager: bool = False


class ImportEntry(Struct, frozen=True, kw_only=True):
    """One memory of an import (TomoriBot's data import: a memory item of an export file).

    Attributes:
        content: The memory's text: trimmed, never rewritten, at most MAX_MEMORY_LENGTH UTF-16
            units (a longer or blank one refuses the whole import).
        tags: This memory's tags, parsed as the panels parse them (split on commas, trimmed,
            quotes stripped, empty and over-32-character tags dropped, duplicates removed, at most
            5 kept; `#name` is a channel); null for none.
    """

    content: PanelText
    tags: PanelTags | None = None


class ManualMemory(Envelope, kw_only=True, frozen=True):
    """`memory.manual`: the `/memories` and `/personal memories` panels.

    People write these by hand: they are only trimmed, never rewritten, never evict (at the cap
    an add is refused), and every add and edit protects the row from eviction.

    Attributes:
        actor: Who is using the panel, and whether they manage the server.
        scope: server (the /memories panel: the workspace's memories) or personal (the
            /personal memories panel: the actor's own, or identity_id's).
        action: add (content), add_batch (contents and content, all or nothing), edit
            (memory_id, with content and/or tags), remove (memory_id) or import (strategy and
            entries: TomoriBot's data import of one lineage's memories, all or nothing; server
            memories only by a manager).
        lineage_id: Which lineage's memories: for server memories the active persona's lineage;
            for personal ones a persona's lineage, or 0 for the user's global memories (shown to
            every persona). An edit or remove finds only rows of exactly this lineage.
        persona_id: The persona a server memory added here is attributed to; null for none.
            Ignored for personal memories.
        identity_id: Personal scope only: act on the memories of this message-proxy identity
            (`pk:<uuid>`, `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`),
            which the actor must host; null for the actor's own.
        memory_id: The memory to edit or remove (its server_memory_id or personal_memory_id).
        content: The text to add, or the new text of an edit (null keeps the stored text). In
            add_batch, the typed entry, added after the lines of contents.
        contents: add_batch only: the entries to add, typically the lines of an uploaded text
            file. Blank lines are dropped and lines already stored (or repeated) are skipped,
            ignoring case.
        tags: Tags as the panel took them: raw comma-separated text or a list. Split on commas,
            trimmed, quotes stripped; empty and over-32-character tags dropped; duplicates
            removed; at most 5 kept. A tag starting with `#` names a channel. On an edit, null
            keeps the stored tags. Not read by import (each entry has its own).
        strategy: import only: merge (add the entries, skipping any whose text and tags equal
            a stored memory of this owner and exact lineage, or an earlier entry; whitespace
            runs and tag order ignored) or replace (delete every memory of this owner and exact
            lineage, then add every entry). Refused with limit-reached, nothing changed, when
            the owner's memories would then exceed the cap.
        entries: import only, and required there: the memories to import, each with its own
            tags. An empty list with replace clears the lineage.
    """

    actor: Actor
    scope: MemoryScope
    action: Literal["add", "add_batch", "edit", "remove", "import"]
    lineage_id: LineageId
    persona_id: Int32 | None = None
    identity_id: SyntheticId | None = None
    memory_id: MemoryId | None = None
    content: PanelText | None = None
    contents: Annotated[list[PanelText], Meta(max_length=2000)] | None = None
    tags: PanelTags | None = None
    strategy: Literal["merge", "replace"] = "merge"
    entries: Annotated[list[ImportEntry], Meta(max_length=MAX_IMPORT_ENTRIES)] | None = None


# The statuses of a panel command, answered to the person using the panel.
ManualStatus = Literal[
    "added",
    "updated",
    "unchanged",
    "removed",
    "privacy-blocked",
    "host-protected",
    "empty-content",
    "content-too-long",
    "limit-reached",
    "batch-limit-reached",
    "all-duplicates",
    "not-found",
    "blacklisted",
    "teaching-disabled",
    "imported",
    "managers-only",
    Failed,
]
ADDED: Final[ManualStatus] = "added"
UPDATED: Final[ManualStatus] = "updated"
UNCHANGED: Final[ManualStatus] = "unchanged"
REMOVED: Final[ManualStatus] = "removed"
PRIVACY_BLOCKED: Final[ManualStatus] = "privacy-blocked"
HOST_PROTECTED: Final[ManualStatus] = "host-protected"
EMPTY_CONTENT: Final[ManualStatus] = "empty-content"
CONTENT_TOO_LONG: Final[ManualStatus] = "content-too-long"
LIMIT_REACHED: Final[ManualStatus] = "limit-reached"
BATCH_LIMIT_REACHED: Final[ManualStatus] = "batch-limit-reached"
ALL_DUPLICATES: Final[ManualStatus] = "all-duplicates"
NOT_FOUND: Final[ManualStatus] = "not-found"
BLACKLISTED: Final[ManualStatus] = "blacklisted"
TEACHING_DISABLED: Final[ManualStatus] = "teaching-disabled"
IMPORTED: Final[ManualStatus] = "imported"
MANAGERS_ONLY: Final[ManualStatus] = "managers-only"


class ManualData(OpDataBase, kw_only=True):
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


class ManualResult(OpResultBase, kw_only=True):
    """Result of memory.manual."""

    data: ManualData
