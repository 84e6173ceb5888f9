"""memory.seed_bio: the one-time bio snapshot of a new proxy identity, at lineage 0."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.codec import encode
from contracts.kinds.seed_bio import SeedBio
from db import applier
from db.effects import SeedBioMemory, StoreResult
from db.repository import MemoryRepository
from worker.domain import events
from worker.domain.op_result import failed
from worker.domain.owner import GLOBAL_LINEAGE, cache_key
from worker.domain.workspace import Limits
from worker.kinds.seed_bio.decision import SeedPlan, decide_seed
from worker.kinds.seed_bio.rendering import seeded, skipped
from worker.services import rows
from worker.services.base import Answer, Handled, Wiring, event_rows, once
from worker.services.stored import seen_before


class SeedBioService:
    def __init__(self, repo: MemoryRepository, limits: Limits, max_units: int) -> None:
        self._repo = repo
        self._limits = limits
        self._max_units = max_units

    async def run(self, cmd: SeedBio, delivery: int | None = None) -> Handled:
        return await once(cmd, lambda: self._run(cmd, delivery))

    async def _run(self, cmd: SeedBio, delivery: int | None) -> Handled:
        cid = cmd.command_id
        # The identity's lock serialises concurrent seeds; the bio_seeds row, written in the same
        # transaction, makes every later seed a no-op whatever its command id.
        async with self._repo.owner_transaction([("personal", cmd.identity_user_id)], read_only=cmd.dry_run) as tx:
            repeat = seen_before(cmd, await tx.stored(cid), tx.tenant, delivery)
            if repeat is not None:
                return repeat
            row = await tx.seed_context(cmd.identity_user_id, cmd.workspace_id)
            decision = decide_seed(cmd, rows.identity(row.identity), already_seeded=row.already_seeded,
                                   lineage0_count=row.lineage0_count, limits=self._limits,
                                   max_units=self._max_units)
            pending = []
            if isinstance(decision, SeedPlan):
                applied = await applier.carry_out(tx, [SeedBioMemory(decision.user_id, GLOBAL_LINEAGE, decision.content)])
                (memory_id,) = applied.inserted
                key = cache_key("personal", cmd.identity_user_id)
                now = datetime.now(UTC).isoformat()
                # The user cache is invalidated only after a write, and only by this command.
                pending = events.invalidations(cid, [key], now, "bio_seeded")
                pending.append(events.saved(cid, now, scope="personal", workspace_id=cmd.workspace_id,
                                            owner_id=cmd.identity_user_id, lineage_id=GLOBAL_LINEAGE,
                                            memory_id=memory_id, content=decision.content, source="bio_seed",
                                            manually_written=False))
                result = seeded(cid, memory_id, [key])
            else:
                result = skipped(cid, decision.reason)
            stored_events = event_rows(pending)
            answer = Answer(encode(result), result.data.status, created_for=("personal", cmd.identity_user_id))
            await applier.store(tx, StoreResult(cid, "seed_bio", cmd.workspace_id, answer.status, answer.result,
                                                stored_events, delivery))
        return Handled(answer, stored_events, duplicate=False)

    def failure_result(self, cmd: SeedBio) -> bytes:
        return encode(failed(cmd.command_id, "the bio could not be saved"))


def build(wiring: Wiring) -> SeedBioService:
    """The seed_bio kind's service, as the service table (worker/consuming/app.py) makes it."""
    return SeedBioService(wiring.repo, wiring.limits, wiring.settings.message_proxy_bio_seed_max_chars)
