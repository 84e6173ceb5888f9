"""memory.reinforce: mark the memories a reply used, so decay spares them."""

from __future__ import annotations

from contracts.codec import encode
from contracts.kinds.reinforce import ReinforceMemories
from db import applier
from db.effects import Reinforce, StoreResult
from db.repository import MemoryRepository
from worker.domain.op_result import failed
from worker.kinds.reinforce.rendering import reinforced
from worker.services.base import Answer, Handled, Wiring, once
from worker.services.stored import seen_before


class ReinforceService:
    def __init__(self, repo: MemoryRepository) -> None:
        self._repo = repo

    async def run(self, cmd: ReinforceMemories, delivery: int | None = None) -> Handled:
        """No events: nothing for a redelivery to publish again, so `delivery` is not stored."""
        return await once(cmd, lambda: self._run(cmd))

    async def _run(self, cmd: ReinforceMemories) -> Handled:
        server_ids = sorted({m.memory_id for m in cmd.memories if m.scope == "server"})
        personal_ids = sorted({m.memory_id for m in cmd.memories if m.scope == "personal"})
        async with self._repo.owner_transaction([], read_only=cmd.dry_run) as tx:
            repeat = seen_before(cmd, await tx.stored(cmd.command_id), tx.tenant)
            if repeat is not None:
                return repeat
            # Every owner whose rows change is locked, all at once in a fixed order. A row's
            # owner never changes, so reading the owners before locking them is safe.
            owners = [("server", cmd.workspace_id)] if server_ids else []
            if personal_ids:
                owners += [("personal", o) for o in await tx.personal_owners(personal_ids, cmd.lineage_id)]
            await tx.lock_owners(owners)
            applied = await applier.carry_out(tx, [Reinforce(cmd.workspace_id, cmd.lineage_id, server_ids,
                                                             personal_ids)])
            result = encode(reinforced(cmd.command_id, applied.marked))
            # No cache invalidation: reinforcement does not change what a bot shows.
            await applier.store(tx, StoreResult(cmd.command_id, "reinforce", cmd.workspace_id, "reinforced", result))
        return Handled(Answer(result, "reinforced"), [], duplicate=False)

    def failure_result(self, cmd: ReinforceMemories) -> bytes:
        return encode(failed(cmd.command_id, "the memories could not be marked as used"))


def build(wiring: Wiring) -> ReinforceService:
    """The reinforce kind's service, as the service table (worker/consuming/app.py) makes it."""
    return ReinforceService(wiring.repo)
