"""memory.manual: the panels' add, add_batch, edit and remove, and the data import, under the owner lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import assert_never

from contracts.codec import encode
from contracts.events import Source
from contracts.kinds.manual import ManualMemory
from contracts.op_result import OpResult
from db import applier
from db.context_rows import ManualContextRow
from db.effects import (
    Applied,
    DeleteLineage,
    DeleteMemory,
    DirectoryRow,
    Effect,
    InsertPersonalMemories,
    InsertServerMemories,
    PanelEdit,
    StoreResult,
)
from db.repository import MemoryRepository
from db.requests import ManualContextRequest
from worker.domain import events
from worker.domain.events import EventTemplate
from worker.domain.memory import MemoryEntry
from worker.domain.op_result import failed
from worker.domain.owner import cache_key
from worker.domain.workspace import Limits
from worker.kinds.manual.context import ManualContext
from worker.kinds.manual.decided import Delete, Import, Insert, ManualDecision, Refuse, Unchanged, Update
from worker.kinds.manual.decision import decide_manual
from worker.kinds.manual.rendering import added, imported, refused, removed, unchanged, updated
from worker.services import rows
from worker.services.base import Answer, Handled, Wiring, event_rows, once
from worker.services.stored import seen_before


def owner_of(cmd: ManualMemory) -> str:
    """Server memories belong to the workspace; personal ones to the actor or the identity."""
    if cmd.scope == "server":
        return cmd.workspace_id
    return cmd.identity_id or cmd.actor.id


def context_from_row(row: ManualContextRow) -> ManualContext:
    return ManualContext(
        workspace=rows.workspace(row.workspace),
        actor_privacy_level=row.actor_privacy_level,
        actor_blacklisted=row.actor_blacklisted,
        identity=rows.identity(row.identity),
        identity_hosted_by_actor=row.identity_hosted_by_actor,
        count=row.count,
        target=rows.panel_memory(row.target),
        existing_contents=tuple(row.existing),
        lineage_rows=tuple(MemoryEntry(r.content, tuple(r.tags)) for r in row.lineage_rows),
    )


class ManualMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits) -> None:
        self._repo = repo
        self._limits = limits

    async def run(self, cmd: ManualMemory, delivery: int | None = None) -> Handled:
        return await once(cmd, lambda: self._run(cmd, delivery))

    async def _run(self, cmd: ManualMemory, delivery: int | None) -> Handled:
        owner_id = owner_of(cmd)
        async with self._repo.owner_transaction([(cmd.scope, owner_id)], read_only=cmd.dry_run) as tx:
            repeat = seen_before(cmd, await tx.stored(cmd.command_id), tx.tenant, delivery)
            if repeat is not None:
                return repeat
            row = await tx.manual_context(ManualContextRequest(
                scope=cmd.scope, workspace_id=cmd.workspace_id, owner_id=owner_id, actor_id=cmd.actor.id,
                identity_id=cmd.identity_id, lineage_id=cmd.lineage_id, memory_id=cmd.memory_id,
                want_existing=cmd.action == "add_batch",  # only a batch de-duplicates against stored rows
                want_lineage_rows=cmd.action == "import",
            ))
            decision = decide_manual(cmd, context_from_row(row), self._limits)
            applied = await applier.carry_out(tx, manual_effects(cmd, row, decision))
            result, pending = rendered(cmd, owner_id, row, decision, applied)
            stored_events = event_rows(pending)
            answer = Answer(encode(result), result.data.status, created_for=(cmd.scope, owner_id))
            await applier.store(tx, StoreResult(cmd.command_id, "manual", cmd.workspace_id, answer.status,
                                                answer.result, stored_events, delivery))
        return Handled(answer, stored_events, duplicate=False)

    def failure_result(self, cmd: ManualMemory) -> bytes:
        return encode(failed(cmd.command_id, "the change could not be saved; try again shortly"))


def manual_effects(cmd: ManualMemory, row: ManualContextRow, decision: ManualDecision) -> list[Effect]:
    """What a panel decision changes. A replace deletes the owner's rows of the exact lineage
    (as read under the lock), then every entry is inserted (imported rows are a person's
    deliberate act: protected)."""
    match decision:
        case Refuse() | Unchanged():
            return []
        case Delete(memory_id):
            return [DeleteMemory(cmd.scope, memory_id)]
        case Update(memory_id, content, tags):
            return [PanelEdit(cmd.scope, memory_id, content, tags)]
        case Insert():
            return [_insert(cmd, row, [MemoryEntry(content, decision.tags) for content in decision.contents],
                            "manual")]
        case Import():
            effects: list[Effect] = []
            if decision.replace and (owner_key := _owner_key(cmd, row)) is not None:
                effects.append(DeleteLineage(cmd.scope, owner_key, cmd.lineage_id,
                                             [(r.memory_id, r.content) for r in row.lineage_rows]))
            if decision.entries:
                effects.append(_insert(cmd, row, decision.entries, "import"))
            return effects
        case _:
            assert_never(decision)


def rendered(cmd: ManualMemory, owner_id: str, row: ManualContextRow, decision: ManualDecision,
             applied: Applied) -> tuple[OpResult, list[EventTemplate]]:
    """The answer and the events, from the decision and what carrying it out learned."""
    cid = cmd.command_id
    key = cache_key(cmd.scope, owner_id)
    now = datetime.now(UTC).isoformat()
    pending = events.invalidations(cid, [key], now, f"memory_{cmd.action}")
    match decision:
        case Refuse():
            return refused(cid, decision), []
        case Unchanged(memory_id):
            return unchanged(cid, memory_id), []
        case Delete(memory_id, content):
            pending.append(events.removed(cid, now, scope=cmd.scope, owner_id=owner_id, lineage_id=cmd.lineage_id,
                                          memory_id=memory_id, content=content))
            return removed(cid, memory_id, [key]), pending
        case Update(memory_id, content):
            if row.target is None:  # decide_manual edits only the row it was given
                raise RuntimeError(f"{cid}: an edit of memory {memory_id} without its row")
            pending.append(_saved(cmd, owner_id, now, memory_id, content, row.target.source))
            return updated(cid, memory_id, [key]), pending
        case Insert():
            ids = list(applied.inserted)
            pending += [_saved(cmd, owner_id, now, memory_id, content, "manual")
                        for memory_id, content in zip(ids, decision.contents, strict=True)]
            return added(cid, ids, [key], decision.skipped_duplicates), pending
        case Import():
            return _imported(cmd, owner_id, decision, applied, pending, now)
        case _:
            assert_never(decision)


def _imported(cmd: ManualMemory, owner_id: str, decision: Import, applied: Applied, pending: list[EventTemplate],
              now: str) -> tuple[OpResult, list[EventTemplate]]:
    """The invalidation goes out only when a row changed; it comes first, then memory.removed
    per deleted row and memory.saved per inserted one."""
    cid = cmd.command_id
    gone, ids = applied.removed, list(applied.inserted)
    if not gone and not ids:
        return imported(cid, [], 0, decision.skipped_duplicates, []), []
    pending += [events.removed(cid, now, scope=cmd.scope, owner_id=owner_id, lineage_id=cmd.lineage_id,
                               memory_id=memory_id, content=content) for memory_id, content in gone]
    pending += [_saved(cmd, owner_id, now, memory_id, entry.content, "import")
                for memory_id, entry in zip(ids, decision.entries, strict=True)]
    key = cache_key(cmd.scope, owner_id)
    return imported(cid, ids, len(gone), decision.skipped_duplicates, [key]), pending


def _saved(cmd: ManualMemory, owner_id: str, now: str, memory_id: int, content: str, source: Source) -> EventTemplate:
    return events.saved(cmd.command_id, now, scope=cmd.scope, workspace_id=cmd.workspace_id, owner_id=owner_id,
                        lineage_id=cmd.lineage_id, memory_id=memory_id, content=content, source=source,
                        manually_written=True, suffix=f"saved:{memory_id}")


def _owner_key(cmd: ManualMemory, row: ManualContextRow) -> int | None:
    """The owner's servers.server_id or users.user_id; None when it has no row (so no memories)."""
    if cmd.scope == "server":
        return row.workspace.server_id if row.workspace else None
    return row.identity.user_id if row.identity is not None else row.owner_user_id


def _insert(cmd: ManualMemory, row: ManualContextRow, entries: Sequence[MemoryEntry], source: Source) -> Effect:
    if cmd.scope == "server":
        server = DirectoryRow(row.workspace.server_id if row.workspace else None, cmd.workspace_id)
        teacher = DirectoryRow(None, cmd.actor.id)  # the importer, as TomoriBot's bundle import records
        return InsertServerMemories(server, teacher, cmd.persona_id, cmd.lineage_id, entries, source, True)
    user_id = row.identity.user_id if row.identity is not None else row.owner_user_id or None
    return InsertPersonalMemories(DirectoryRow(user_id, cmd.actor.id), cmd.lineage_id, entries, source, True)


def build(wiring: Wiring) -> ManualMemoryService:
    """The manual kind's service, as the service table (worker/consuming/app.py) makes it."""
    return ManualMemoryService(wiring.repo, wiring.limits)
