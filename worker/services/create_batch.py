"""memory.create with the database work of concurrent commands shared.

A workspace has one command in flight at a time (worker/consuming/intake/partitions.py), so the creates in
flight at once are of different workspaces. They go to the database together: one round trip reads
every context, the pure decisions run, and one transaction (memory_create_batch) saves them
all, each under its owner's lock taken up front in a fixed order. Per command this is
exactly what CreateMemoryService.run does (its step() and handled()); only the round trips and the
commit are shared.
Should the batch fail, every command runs again on its own (Coalescer), so errors, retries
and dead letters stay per command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from contracts.commands import CreateMemory
from db.repository import MemoryRepository, lock_order
from worker.domain.targets import lookup_ids
from worker.services.base import Handled
from worker.services.create_memory import CreateMemoryService
from worker.shared.coalescer import Coalescer

_encode = msgspec.json.Encoder().encode


class _ContextRequest(msgspec.Struct):
    command_id: str
    workspace_id: str
    ids: list[str]
    lineage_id: int


class _Record(msgspec.Struct):
    command_id: str
    workspace_id: str
    result: msgspec.Raw


class _Save(msgspec.Struct):
    plan: msgspec.Raw


class _Batch(msgspec.Struct):
    owners: list[tuple[str, str]]
    ops: list[_Record | _Save]


class DuplicateInBatch(Exception):
    """Two deliveries of one command id in one batch: they run one by one instead."""


class BatchedCreateService:
    def __init__(self, service: CreateMemoryService, repo: MemoryRepository, *, max_batch: int,
                 runners: int = 1, observe: Callable[[int], None] = lambda size: None) -> None:
        self._service = service
        self._repo = repo
        self._coalesce = Coalescer(self.run_batch, service.run, max_batch=max_batch, runners=runners,
                                   observe=observe)

    async def run(self, cmd: CreateMemory) -> Handled:
        return await self._coalesce(cmd)

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return self._service.failure_result(cmd)

    async def aclose(self, timeout: float) -> None:
        await self._coalesce.aclose(timeout)

    async def run_batch(self, cmds: Sequence[CreateMemory]) -> list[Handled]:
        if len({cmd.command_id for cmd in cmds}) < len(cmds):
            raise DuplicateInBatch()
        contexts = await self._repo.create_contexts(_encode([
            _ContextRequest(cmd.command_id, cmd.workspace_id, list(lookup_ids(cmd)), cmd.persona.lineage_id)
            for cmd in cmds]))
        steps = [self._service.step(cmd, row) for cmd, row in zip(cmds, contexts, strict=True)]
        handled: list[Handled | None] = [step.answer for step in steps]
        ops: list[_Record | _Save] = []
        written: list[int] = []  # the command index of each op
        for index, (cmd, step) in enumerate(zip(cmds, steps)):
            if step.answer is not None:
                continue
            if step.refusal is not None:
                ops.append(_Record(cmd.command_id, cmd.workspace_id, msgspec.Raw(step.refusal)))
            else:
                ops.append(_Save(msgspec.Raw(step.request)))
            written.append(index)
        if ops:
            owners = lock_order(step.owner for step in steps if step.owner is not None)
            saved = await self._repo.create_batch(_encode(_Batch(owners, ops)))
            for index, row in zip(written, saved, strict=True):
                handled[index] = self._service.handled(cmds[index], row)
        return handled  # type: ignore[return-value]  # every slot is filled above
