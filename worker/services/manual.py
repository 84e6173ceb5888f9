"""memory.manual: the panels' add, add_batch, edit and remove, and the data import, under the owner lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import assert_never

from contracts.codec import encode
from contracts.commands import ManualMemory
from contracts.events import Source
from contracts.results import OpResult
from db.repository import ManualContextRow, MemoryRepository, Tx
from db.requests import ManualContextRequest
from worker.domain import events, op_results
from worker.domain.events import EventTemplate
from worker.domain.manual import decide_manual
from worker.domain.model import (
    Delete,
    Import,
    Insert,
    Limits,
    ManualContext,
    ManualDecision,
    MemoryEntry,
    Refuse,
    Unchanged,
    Update,
)
from worker.domain.owner import cache_key
from worker.services import rows
from worker.services.base import Answer, Handled, event_rows, once
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
        async with self._repo.owner_transaction([(cmd.scope, owner_id)], dry=cmd.dry_run) as tx:
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
            result, pending = await self._apply(tx, cmd, owner_id, row, decision)
            stored_events = event_rows(pending)
            answer = Answer(encode(result), result.data.status, created_for=(cmd.scope, owner_id))
            await tx.store_result(cmd.command_id, "manual", cmd.workspace_id, answer.status, answer.result,
                                  stored_events, delivery)
        return Handled(answer, stored_events, duplicate=False)

    def failure_result(self, cmd: ManualMemory) -> bytes:
        return encode(op_results.failed(cmd.command_id, "the change could not be saved; try again shortly"))

    async def _apply(self, tx: Tx, cmd: ManualMemory, owner_id: str, row: ManualContextRow,
                     decision: ManualDecision) -> tuple[OpResult, list[EventTemplate]]:
        cid = cmd.command_id
        key = cache_key(cmd.scope, owner_id)
        now = datetime.now(UTC).isoformat()
        pending = events.invalidations(cid, [key], now, f"memory_{cmd.action}")
        match decision:
            case Refuse():
                return op_results.refused(cid, decision), []
            case Unchanged(memory_id):
                return op_results.unchanged(cid, memory_id), []
            case Delete(memory_id, content):
                await tx.delete_memory(cmd.scope, memory_id)
                pending.append(events.removed(cid, now, scope=cmd.scope, owner_id=owner_id, lineage_id=cmd.lineage_id,
                                              memory_id=memory_id, content=content))
                return op_results.removed(cid, memory_id, [key]), pending
            case Update(memory_id, content, tags):
                await tx.update_memory(cmd.scope, memory_id, content, tags)
                if row.target is None:  # decide_manual edits only the row it was given
                    raise RuntimeError(f"{cid}: an edit of memory {memory_id} without its row")
                pending.append(self._saved(cmd, owner_id, now, memory_id, content, row.target.source))
                return op_results.updated(cid, memory_id, [key]), pending
            case Insert():
                entries = [MemoryEntry(content, decision.tags) for content in decision.contents]
                ids = await self._insert(tx, cmd, row, entries, "manual")
                pending += [self._saved(cmd, owner_id, now, memory_id, content, "manual")
                            for memory_id, content in zip(ids, decision.contents, strict=True)]
                return op_results.added(cid, ids, [key], decision.skipped_duplicates), pending
            case Import():
                return await self._import(tx, cmd, owner_id, row, decision, pending, now)
            case _:
                assert_never(decision)

    @staticmethod
    def _saved(cmd: ManualMemory, owner_id: str, now: str, memory_id: int, content: str,
               source: Source) -> EventTemplate:
        return events.saved(cmd.command_id, now, scope=cmd.scope, workspace_id=cmd.workspace_id, owner_id=owner_id,
                            lineage_id=cmd.lineage_id, memory_id=memory_id, content=content, source=source,
                            manually_written=True, suffix=f"saved:{memory_id}")

    async def _import(self, tx: Tx, cmd: ManualMemory, owner_id: str, row: ManualContextRow, decision: Import,
                      pending: list[EventTemplate], now: str) -> tuple[OpResult, list[EventTemplate]]:
        """A replace deletes the owner's rows of the exact lineage, then every entry is inserted
        (imported rows are a person's deliberate act: protected). The invalidation goes out only
        when a row changed; it comes first, then memory.removed per deleted row and memory.saved
        per inserted one."""
        cid = cmd.command_id
        gone: list[tuple[int, str]] = []
        if decision.replace and (owner_key := self._owner_key(cmd, row)) is not None:
            gone = await tx.delete_lineage(cmd.scope, owner_key, cmd.lineage_id)
        ids = await self._insert(tx, cmd, row, decision.entries, "import") if decision.entries else []
        if not gone and not ids:
            return op_results.imported(cid, [], 0, decision.skipped_duplicates, []), []
        pending += [events.removed(cid, now, scope=cmd.scope, owner_id=owner_id, lineage_id=cmd.lineage_id,
                                   memory_id=memory_id, content=content) for memory_id, content in gone]
        pending += [self._saved(cmd, owner_id, now, memory_id, entry.content, "import")
                    for memory_id, entry in zip(ids, decision.entries, strict=True)]
        key = cache_key(cmd.scope, owner_id)
        return op_results.imported(cid, ids, len(gone), decision.skipped_duplicates, [key]), pending

    @staticmethod
    def _owner_key(cmd: ManualMemory, row: ManualContextRow) -> int | None:
        """The owner's servers.server_id or users.user_id; None when it has no row (so no memories)."""
        if cmd.scope == "server":
            return row.workspace.server_id if row.workspace else None
        return row.identity.user_id if row.identity is not None else row.owner_user_id

    async def _insert(self, tx: Tx, cmd: ManualMemory, row: ManualContextRow, entries: Sequence[MemoryEntry],
                      source: Source) -> list[int]:
        if cmd.scope == "server":
            server_id = row.workspace.server_id if row.workspace else await tx.ensure_server(cmd.workspace_id)
            teacher = await tx.ensure_user(cmd.actor.id)  # the importer, as TomoriBot's bundle import records
            return await tx.insert_server_memories(server_id, cmd.persona_id, cmd.lineage_id, teacher, entries,
                                                   source, True)
        if row.identity is not None:
            user_id = row.identity.user_id
        else:
            user_id = row.owner_user_id or await tx.ensure_user(cmd.actor.id)
        return await tx.insert_personal_memories(user_id, cmd.lineage_id, entries, source, True)
