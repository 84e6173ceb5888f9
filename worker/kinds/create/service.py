"""memory.create: read the contexts, decide (pure, once), store and carry out the decisions in
one transaction, answer from what was stored. One path, for one create or many.

The creates in flight at once are of different workspaces (a workspace has one command in
flight at a time: worker/consuming/intake/lanes.py), so they go to the database together
(the Coalescer): one round trip reads every context (memory_create_contexts), the pure
decisions run (worker/kinds/create/decision.py), and one transaction (memory_create_batch) stores
them all, each save under its owner's lock, taken up front in a fixed order, its outcome
chosen under the lock. Dry runs are decided the same way under the same locks and never
applied (memory_create_dry_batch, in its own statement). A lone create is a batch of one.
Each command's answer and events come from the row its op returned (worker/services/stored.py),
exactly as a repeat's would. Should a batch fail, every command runs again on its own, so
errors, retries and dead letters stay per command.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from contracts.codec import encode
from contracts.kinds.create import CreateMemory
from db.context_rows import CreateContextRow
from db.inbox import BatchRow
from db.repository import MemoryRepository
from db.requests import CreateBatchRequest, CreateContextRequest, CreateOp
from db.transaction import lock_order
from worker.domain.context import CreateContext
from worker.domain.people import ProxyIdentity
from worker.domain.targets import lookup_ids
from worker.domain.workspace import Limits
from worker.kinds.create import texts
from worker.kinds.create.arguments import ToolArguments, parse_tool_args
from worker.kinds.create.decision import decide_create
from worker.services import rows
from worker.services.base import Handled, Wiring, once
from worker.services.stored import answer, published_events, seen_before
from worker.shared.coalescer import Coalescer

# A create and the stream sequence of its delivery (run()'s `delivery`).
_Delivered = tuple[CreateMemory, int | None]


class DuplicateInBatch(Exception):
    """Two deliveries of one command id in one batch: they run one by one instead."""


def context_from_row(row: CreateContextRow) -> CreateContext:
    users = {u.disc_id: rows.known_user(u) for u in row.users}
    proxies = {u.disc_id: ProxyIdentity(u.user_id, u.disc_id, rows.hosts(u.proxy_hosts))
               for u in row.users if u.proxy_hosts is not None}
    return CreateContext(workspace=rows.workspace(row.workspace), users=users, proxies=proxies)


class CreateMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits, *, max_batch: int = 1, runners: int = 1,
                 observe: Callable[[int], None] = lambda size: None) -> None:
        """`max_batch` creates in flight at once share the round trips and the commit (1: each
        goes alone), with up to `runners` batches in the database at once; `observe` is told
        each batch's size."""
        self._repo = repo
        self._limits = limits
        self._coalesce = Coalescer(self._run_delivered, self._run_alone, max_batch=max_batch, runners=runners,
                                   observe=observe)

    async def run(self, cmd: CreateMemory, delivery: int | None = None) -> Handled:
        """The create, stored in its inbox row (applied_by = `delivery`), with what to publish."""
        return await self._coalesce((cmd, delivery))

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return encode(texts.db_error(cmd.command_id))

    async def aclose(self, timeout: float) -> None:
        await self._coalesce.aclose(timeout)

    async def _run_alone(self, item: _Delivered) -> Handled:
        """A batch of one, run again should a racing delivery store the command first."""
        cmd, delivery = item

        async def alone() -> Handled:
            (handled,) = await self.run_batch([cmd], [delivery])
            return handled

        return await once(cmd, alone)

    async def _run_delivered(self, items: Sequence[_Delivered]) -> list[Handled]:
        return await self.run_batch([cmd for cmd, _ in items], [delivery for _, delivery in items])

    async def run_batch(self, cmds: Sequence[CreateMemory],
                        deliveries: Sequence[int | None] | None = None) -> list[Handled]:
        """The creates `cmds`, each with its delivery as for run() (`deliveries` None: none has one)."""
        if len({cmd.command_id for cmd in cmds}) < len(cmds):
            raise DuplicateInBatch()
        applied_by = list(deliveries) if deliveries is not None else [None] * len(cmds)
        args = [parse_tool_args(cmd.tool_args) for cmd in cmds]
        tenant = self._repo.tenant
        answered: dict[int, Handled] = {}
        ops: dict[int, CreateOp] = {}  # by command index, in command order
        dry = {index for index, cmd in enumerate(cmds) if cmd.dry_run}
        async with self._repo.session() as db:  # the read and the write on one connection
            contexts = await db.create_contexts([
                CreateContextRequest(cmd.command_id, cmd.workspace_id,
                                     list(lookup_ids(cmd, a.target if isinstance(a, ToolArguments) else None)),
                                     cmd.persona.lineage_id)
                for cmd, a in zip(cmds, args, strict=True)])
            for index, (cmd, a, context) in enumerate(zip(cmds, args, contexts, strict=True)):
                repeat = seen_before(cmd, context.stored, tenant, applied_by[index])
                if repeat is not None:
                    answered[index] = repeat
                    continue
                decision = decide_create(cmd, a, context_from_row(context), self._limits,
                                         rows.notice_settings(context.workspace))
                ops[index] = CreateOp(cmd.command_id, cmd.workspace_id, decision, applied_by[index])
            # The same decisions either way; a dry run's are answered and never applied.
            for run, dry_runs in ((db.create_batch, False), (db.create_dry_batch, True)):
                if mine := {index: op for index, op in ops.items() if (index in dry) is dry_runs}:
                    answered |= await _stored(cmds, applied_by, tenant, mine, run)
        return [answered[index] for index in range(len(cmds))]


async def _stored(cmds: Sequence[CreateMemory], applied_by: Sequence[int | None], tenant: str,
                  ops: dict[int, CreateOp],
                  run: Callable[[CreateBatchRequest], Awaitable[list[BatchRow]]]) -> dict[int, Handled]:
    """`ops` (by command index) run in one call, under their owners' locks; each one's answer."""
    owners = lock_order(owner for op in ops.values() if (owner := op.owner) is not None)
    answered: dict[int, Handled] = {}
    for index, row in zip(ops, await run(CreateBatchRequest(owners, list(ops.values()))), strict=True):
        if row.duplicate:  # a racing delivery stored it first
            answered[index] = seen_before(cmds[index], row.stored, tenant, applied_by[index])
        else:
            answered[index] = Handled(answer(row.stored), published_events(row.stored), duplicate=False)
    return answered


def build(wiring: Wiring) -> CreateMemoryService:
    """The create kind's service, as the service table (worker/consuming/app.py) makes it."""
    return CreateMemoryService(wiring.repo, wiring.limits, max_batch=wiring.settings.create_batch_max,
                               runners=wiring.settings.create_batch_runners, observe=wiring.observe_batch)
