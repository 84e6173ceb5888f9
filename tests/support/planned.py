"""The memory_create_batch() argument the worker's own code builds for some creates, taken
before it is sent: the real context read, the real decisions, nothing stored. For tests that
hand the SQL a request of the worker's making and look at what it does with it, and for the
bench's baseline, which replays the requests with pgbench."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from contracts.kinds.create import CreateMemory
from db.inbox import BatchRow
from db.repository import MemoryRepository
from db.requests import CreateBatchRequest
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService


class _Taken(Exception):
    def __init__(self, batch: CreateBatchRequest) -> None:
        self.batch = batch


class _TakingRepository(MemoryRepository):
    """The real context read; the batch is taken, not sent."""

    async def create_batch(self, batch: CreateBatchRequest) -> list[BatchRow]:
        raise _Taken(batch)


async def planned_batch(pool: asyncpg.Pool, cmds: Sequence[CreateMemory], limits: Limits | None = None,
                        deliveries: Sequence[int | None] | None = None) -> CreateBatchRequest:
    """What CreateMemoryService.run_batch(cmds, deliveries) would send, unsent. Fails when
    every command was answered from the inbox (nothing would be sent)."""
    service = CreateMemoryService(_TakingRepository(pool), limits or Limits())
    try:
        await service.run_batch(cmds, deliveries)
    except _Taken as taken:
        return taken.batch
    raise AssertionError("every command was answered from the inbox: the batch sends nothing")
