"""memory.create with the database work of concurrent commands shared.

A workspace has one command in flight at a time (worker/consuming/intake/partitions.py), so the creates in
flight at once are of different workspaces. They go to the database together: one round trip reads
every context, the pure decisions run, and one transaction (memory_create_batch) saves them
all, each under its owner's lock taken up front in a fixed order. When saves wrote nothing
(at the cap, privacy read again), their refusals are worded and stored by one more statement
and transaction, after the first committed; should that one fail, the batch runs again
command by command and the commands already stored are answered from the inbox. Per command this is
exactly what CreateMemoryService.run does (its step() and written()); only the round trips and
the commit are shared.
Should the batch fail, every command runs again on its own (Coalescer), so errors, retries
and dead letters stay per command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import assert_never

from contracts.commands import CreateMemory
from db.repository import MemoryRepository, lock_order
from db.requests import CreateBatchRequest, CreateContextRequest, CreateSaveRequest, RecordOp
from worker.domain.arguments import InvalidArguments, ToolArguments, parse_tool_args
from worker.domain.targets import lookup_ids
from worker.services.base import Handled
from worker.services.create_memory import Answered, CreateMemoryService, Refusal, Save
from worker.shared.coalescer import Coalescer

# A create and the stream sequence of its delivery (CreateMemoryService.run's `delivery`).
_Delivered = tuple[CreateMemory, int | None]


class DuplicateInBatch(Exception):
    """Two deliveries of one command id in one batch: they run one by one instead."""


class BatchedCreateService:
    def __init__(self, service: CreateMemoryService, repo: MemoryRepository, *, max_batch: int,
                 runners: int = 1, observe: Callable[[int], None] = lambda size: None) -> None:
        self._service = service
        self._repo = repo
        self._coalesce = Coalescer(self._run_delivered, self._run_one, max_batch=max_batch, runners=runners,
                                   observe=observe)

    async def run(self, cmd: CreateMemory, delivery: int | None = None) -> Handled:
        return await self._coalesce((cmd, delivery))

    async def _run_one(self, item: _Delivered) -> Handled:
        return await self._service.run(*item)

    async def _run_delivered(self, items: Sequence[_Delivered]) -> list[Handled]:
        return await self.run_batch([cmd for cmd, _ in items], [delivery for _, delivery in items])

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return self._service.failure_result(cmd)

    async def aclose(self, timeout: float) -> None:
        await self._coalesce.aclose(timeout)

    async def run_batch(self, cmds: Sequence[CreateMemory],
                        deliveries: Sequence[int | None] | None = None) -> list[Handled]:
        """`deliveries`: each command's, as for CreateMemoryService.run (None: none of them has one)."""
        if len({cmd.command_id for cmd in cmds}) < len(cmds):
            raise DuplicateInBatch()
        applied_by: list[int | None] = list(deliveries) if deliveries is not None else [None] * len(cmds)
        args = [parse_tool_args(cmd.tool_args) for cmd in cmds]
        async with self._repo.session() as db:  # the reads and the writes on one connection
            return await self._run_on(db, cmds, args, applied_by)

    async def _run_on(self, db: MemoryRepository, cmds: Sequence[CreateMemory],
                      args: list[ToolArguments | InvalidArguments], applied_by: list[int | None]) -> list[Handled]:
        contexts = await db.create_contexts([
            CreateContextRequest(cmd.command_id, cmd.workspace_id, list(lookup_ids(cmd, a)), cmd.persona.lineage_id)
            for cmd, a in zip(cmds, args, strict=True)])
        answered: dict[int, Handled] = {}
        writes: dict[int, Refusal | Save] = {}  # by command index, in command order
        for index, (cmd, a, context) in enumerate(zip(cmds, args, contexts, strict=True)):
            match self._service.step(cmd, a, context, applied_by[index]):
                case Answered(handled):
                    answered[index] = handled
                case Refusal() | Save() as write:
                    writes[index] = write
                case step:
                    assert_never(step)
        while writes:  # at most twice: the saves and refusals, then the refusals of saves that wrote nothing
            ops: list[CreateSaveRequest | RecordOp] = [
                write.request if isinstance(write, Save)
                else RecordOp.of(cmds[index].command_id, cmds[index].workspace_id, write.result)
                for index, write in writes.items()]
            owners = lock_order(op.owner for op in ops if isinstance(op, CreateSaveRequest))
            rows = await db.create_batch(CreateBatchRequest(owners, ops))
            refused: dict[int, Refusal | Save] = {}
            for (index, write), row in zip(writes.items(), rows, strict=True):
                answer = self._service.written(cmds[index], write, row, applied_by[index])
                if isinstance(answer, Handled):
                    answered[index] = answer
                else:
                    refused[index] = answer
            writes = refused
        return [answered[index] for index in range(len(cmds))]
