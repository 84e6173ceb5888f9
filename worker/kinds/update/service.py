"""memory.update: read the context, decide (pure, once), then settle, write and store the decision
in one transaction under the owner's lock; answer from what was stored.

1. The context read before the lock is the create's (`create_contexts`): the command as stored
   if it was seen before, the workspace settings, the users rows of the ids the target may be.
2. The pure decision (worker/kinds/update/decision.py): a refusal, or an `UpdatePlan`.
3. One transaction holding the owner's lock (`owner_transaction`; a refusal locks nothing;
   read-only for a dry run): the inbox is looked at again (a racing delivery may have stored
   the command since), the plan's memory is read and locked with what may refuse an edit now
   (privacy, a proxy's hosts: never a delete), `settle_update` decides, and its effect (the
   edit or the delete) and the inbox row with the decision and how the lock settled it (`settled`) go
   to the applier (db/applier.py), which writes them, or in a dry run foretells the row.
4. The answer and the events come from the stored row (worker/services/stored.py), exactly as
   a repeat's would.
"""

from __future__ import annotations

from contracts.codec import encode
from contracts.kinds.update import UpdateMemory
from db import applier
from db.context_rows import UpdateTargetRow
from db.effects import DeleteMemory, Effect, ModelEdit, StoreDecision
from db.repository import MemoryRepository
from db.requests import CreateContextRequest, UpdateTargetRequest
from worker.domain.people import ProxyIdentity
from worker.domain.targets import lookup_ids
from worker.domain.workspace import Limits
from worker.kinds.create.service import context_from_row
from worker.kinds.update.arguments import read_update_args
from worker.kinds.update.decision import decide_update
from worker.kinds.update.record import LockedMemory, LockedTarget, UpdateOutcome, UpdatePlan, UpdateSettled, settle_update
from worker.kinds.update.rendering import gave_up
from worker.services import rows
from worker.services.base import Handled, Wiring, once
from worker.services.stored import answer, published_events, seen_before


def locked_target(plan: UpdatePlan, row: UpdateTargetRow) -> LockedTarget:
    memory = row.memory
    identity = None
    if plan.proxy and plan.user_id is not None:
        identity = ProxyIdentity(plan.user_id, plan.owner_id, rows.hosts(row.hosts or []))
    return LockedTarget(
        memory=None if memory is None else LockedMemory(memory.lineage_id, memory.content, memory.source,
                                                        memory.manually_written),
        privacy_level=row.privacy_level, blacklisted=row.blacklisted, identity=identity)


def update_effects(plan: UpdatePlan, settled: UpdateSettled) -> list[Effect]:
    """What a settled plan changes: the delete, the edit, or nothing (a refusal under the lock)."""
    if settled.outcome == UpdateOutcome.DELETED:
        return [DeleteMemory(plan.scope, plan.memory_id)]
    if settled.outcome == UpdateOutcome.UPDATED and plan.content is not None:
        return [ModelEdit(plan.scope, plan.memory_id, plan.content)]
    return []


class UpdateMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits) -> None:
        self._repo = repo
        self._limits = limits

    async def run(self, cmd: UpdateMemory, delivery: int | None = None) -> Handled:
        """The update, stored in its inbox row (applied_by = `delivery`), with what to publish."""
        return await once(cmd, lambda: self._run(cmd, delivery))

    def failure_result(self, cmd: UpdateMemory) -> bytes:
        return encode(gave_up(cmd.command_id))

    async def _run(self, cmd: UpdateMemory, delivery: int | None) -> Handled:
        cid = cmd.command_id
        args = read_update_args(cmd.tool_args)
        (context,) = await self._repo.create_contexts([CreateContextRequest(
            cid, cmd.workspace_id, list(lookup_ids(cmd, args.target)), cmd.persona.lineage_id)])
        repeat = seen_before(cmd, context.stored, self._repo.tenant, delivery)
        if repeat is not None:
            return repeat
        decision = decide_update(cmd, args, context_from_row(context), self._limits,
                                 rows.notice_settings(context.workspace))
        plan = decision if isinstance(decision, UpdatePlan) else None
        async with self._repo.owner_transaction([] if plan is None else [(plan.scope, plan.owner_id)],
                                                read_only=cmd.dry_run) as tx:
            repeat = seen_before(cmd, await tx.stored(cid), tx.tenant, delivery)
            if repeat is not None:
                return repeat
            settled: UpdateSettled | None = None
            if plan is not None:
                row = await tx.update_target(UpdateTargetRequest(
                    scope=plan.scope, workspace_id=cmd.workspace_id, owner_id=plan.owner_id, user_id=plan.user_id,
                    memory_id=plan.memory_id, lineage_id=plan.lineage_id, proxy=plan.proxy))
                settled = settle_update(plan, locked_target(plan, row))
                await applier.carry_out(tx, update_effects(plan, settled))
            stored = await applier.store(tx, StoreDecision(cid, "update", cmd.workspace_id, decision, settled, delivery))
        return Handled(answer(stored), published_events(stored), duplicate=False)


def build(wiring: Wiring) -> UpdateMemoryService:
    """The update kind's service, as the service table (worker/consuming/app.py) makes it."""
    return UpdateMemoryService(wiring.repo, wiring.limits)
