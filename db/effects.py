"""What a command would do to the database, as data: the effects a service computes from its
decision, which the applier (db/applier.py) carries out, or, in a dry run, foretells.

A service reads, decides, and then hands its effects over; it writes nothing itself. Each
effect is one tagged Struct, so the applier's `match` over the union is exhaustive: an effect
added here without a way to apply it, and to foretell it, fails the type check.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from db.inbox import EventRow
from worker.domain.memory import MemoryEntry
from worker.domain.scope import Scope

__all__ = [
    "Applied",
    "DeleteLineage",
    "DeleteMemory",
    "DirectoryRow",
    "Effect",
    "InboxRow",
    "InsertPersonalMemories",
    "InsertServerMemories",
    "ModelEdit",
    "PanelEdit",
    "Reinforce",
    "SeedBioMemory",
    "StoreDecision",
    "StoreResult",
]


class DirectoryRow(msgspec.Struct, frozen=True):
    """A servers or users row an insert names: its key as read, or None: made from its Discord
    id first (in a dry run it stays unmade, and nothing dry reads its key)."""

    key: int | None
    disc_id: str


class InsertServerMemories(msgspec.Struct, frozen=True, tag="insert_server"):
    """New rows of a workspace, in entry order (their ids learned in that order)."""

    server: DirectoryRow
    teacher: DirectoryRow | None
    persona_id: int | None
    lineage_id: int
    entries: Sequence[MemoryEntry]
    source: str
    manually_written: bool


class InsertPersonalMemories(msgspec.Struct, frozen=True, tag="insert_personal"):
    """New rows of a person, in entry order (their ids learned in that order)."""

    user: DirectoryRow
    lineage_id: int
    entries: Sequence[MemoryEntry]
    source: str
    manually_written: bool


class SeedBioMemory(msgspec.Struct, frozen=True, tag="seed_bio"):
    """A proxy identity's bio as its one lineage-0 row, with the bio_seeds row that makes every
    later seed a no-op (its id learned)."""

    user_id: int
    lineage_id: int
    content: str


class DeleteMemory(msgspec.Struct, frozen=True, tag="delete"):
    scope: Scope
    memory_id: int


class DeleteLineage(msgspec.Struct, frozen=True, tag="delete_lineage"):
    """Every row of an owner (servers.server_id or users.user_id) and exact lineage. `rows`:
    (id, content) of each as read under the owner's lock before deciding, by id: what a dry run
    answers it would remove (a real one learns what it removed)."""

    scope: Scope
    owner_key: int
    lineage_id: int
    rows: Sequence[tuple[int, str]]


class ModelEdit(msgspec.Struct, frozen=True, tag="model_edit"):
    """The model replaced the text: its protection stays, and it counts as used now."""

    scope: Scope
    memory_id: int
    content: str


class PanelEdit(msgspec.Struct, frozen=True, tag="panel_edit"):
    """A person edited the row: it is protected (manually_written) and not counted as used."""

    scope: Scope
    memory_id: int
    content: str
    tags: Sequence[str]


class Reinforce(msgspec.Struct, frozen=True, tag="reinforce"):
    """The rows a reply used marked as used (their number learned)."""

    workspace_id: str
    lineage_id: int
    server_ids: Sequence[int]
    personal_ids: Sequence[int]


Effect = InsertServerMemories | InsertPersonalMemories | SeedBioMemory | DeleteMemory | DeleteLineage | ModelEdit \
    | PanelEdit | Reinforce


class Applied(msgspec.Struct, frozen=True):
    """What carrying out a command's effects learned (a dry run: what the reads foretell):
    the ids inserted, in effect and entry order; the rows removed, by id; the rows marked used."""

    inserted: tuple[int, ...] = ()
    removed: tuple[tuple[int, str], ...] = ()
    marked: int = 0


class StoreResult(msgspec.Struct, frozen=True, tag="result"):
    """A command's inbox row holding its result as sent (`result`, kept byte for byte) and its
    events whole, in publish order."""

    command_id: str
    kind: str
    workspace_id: str
    status: str
    result: bytes
    events: Sequence[EventRow] = ()
    applied_by: int | None = None


class StoreDecision(msgspec.Struct, frozen=True, tag="decision"):
    """A command's inbox row holding its decision and what it learned under the lock (`facts`;
    None for a refusal), from which its answer and events are rendered."""

    command_id: str
    kind: str
    workspace_id: str
    decision: msgspec.Struct
    facts: msgspec.Struct | None
    applied_by: int | None = None


InboxRow = StoreResult | StoreDecision
