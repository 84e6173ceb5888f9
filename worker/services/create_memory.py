"""memory.create, top to bottom: read the context, decide (pure, once), write in one transaction.

1. Context: the tool arguments are parsed once; memory_create_context() reads in one statement
   all the pure decision needs for the ids they name, and whether the command was seen before
   (seen_before() decides what that means).
2. Decision: decide_save() (worker/domain/save.py) refuses with a finished result, or plans a
   save carrying what it stores when it writes.
3. Transaction: memory_create_batch() (its argument: db/requests.py) stores a refusal, or
   saves: it takes the owner's lock, chooses the outcome under it, completes the eviction
   notice and stores the result, in one statement. A save that ends writing nothing (at the
   cap, privacy read again) stores nothing there: its refusal is worded now
   (worker/domain/outcome.py) and stored like any refusal, in a statement of its own.
4. The events of a save that wrote are built from what it stored (published_events()).

worker/services/create_batch.py runs steps 1 and 3 for many commands in one round trip each;
step() and written() are the parts both share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from contracts.codec import encode
from contracts.commands import CreateMemory
from contracts.results import CommandResult
from db.repository import CreateContextRow, MemoryRepository, SaveRow
from db.requests import CreateSaveRequest
from worker.domain import messages
from worker.domain.arguments import InvalidArguments, ToolArguments, parse_tool_args
from worker.domain.model import CreateContext, KnownUser, Limits, ProxyIdentity, SaveOutcome
from worker.domain.outcome import WRITES, refused_under_lock
from worker.domain.save import CreateSave, decide_save
from worker.domain.targets import lookup_ids
from worker.services import rows
from worker.services.base import Handled, once, published_events, seen_before


def context_from_row(row: CreateContextRow) -> CreateContext:
    users = {u.disc_id: KnownUser(u.user_id, u.disc_id, u.nickname, u.privacy_level) for u in row.users}
    nicknames = {u.disc_id: u.persona_nickname for u in row.users if u.persona_nickname}
    proxies = {u.disc_id: ProxyIdentity(u.user_id, u.disc_id, rows.hosts(u.proxy_hosts))
               for u in row.users if u.proxy_hosts is not None}
    return CreateContext(workspace=rows.workspace(row.workspace), users=users, persona_nicknames=nicknames,
                         proxies=proxies)


@dataclass(frozen=True, slots=True)
class Answered:
    """A repeat: answered from what was stored."""

    handled: Handled


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refusal to store (a 'record' op of memory_create_batch): decided before the lock, or
    by a save that wrote nothing."""

    result: CommandResult


@dataclass(frozen=True, slots=True)
class Save:
    """A save to attempt under the owner's lock (memory_create_batch)."""

    save: CreateSave
    request: CreateSaveRequest


# A create after its context is read and the pure decision made.
CreateStep = Answered | Refusal | Save


class CreateMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits) -> None:
        self._repo = repo
        self._limits = limits

    def step(self, cmd: CreateMemory, args: ToolArguments | InvalidArguments, row: CreateContextRow,
             delivery: int | None = None) -> CreateStep:
        """`args`: parse_tool_args(cmd.tool_args), which also named the ids `row` was read for;
        `delivery`: as for run()."""
        answer = seen_before(cmd, self._repo.stored_of(row), self._repo.tenant, delivery)
        if answer is not None:
            return Answered(answer)
        decision = decide_save(cmd, args, context_from_row(row), self._limits, rows.notice_settings(row.workspace))
        if isinstance(decision, CommandResult):
            return Refusal(decision)
        return Save(decision, CreateSaveRequest.of(cmd, decision, delivery))

    def written(self, cmd: CreateMemory, step: Refusal | Save, row: SaveRow, delivery: int | None = None
                ) -> Handled | Refusal:
        """What a write returned: the command's answer (its own result and events, or the answer
        to a repeat it found stored), or for a save that wrote nothing the refusal to store."""
        if row.duplicate:
            return seen_before(cmd, self._repo.stored_by_write(row), self._repo.tenant, delivery)
        if row.outcome is None:  # a refusal, stored: it publishes nothing
            return Handled(self._repo.stored_by_write(row).result, [], duplicate=False)
        outcome = SaveOutcome(row.outcome)
        if outcome not in WRITES:
            if not isinstance(step, Save):
                raise ValueError(f"a refusal's write reported the outcome {outcome}")
            return Refusal(refused_under_lock(cmd, step.save.plan, outcome, row.current_count))
        stored = self._repo.stored_by_write(row)
        return Handled(stored.result, published_events(cmd, stored), duplicate=False)

    async def run(self, cmd: CreateMemory, delivery: int | None = None) -> Handled:
        """The create, with its result (and what its events are built from) stored in its
        inbox row (applied_by = `delivery`)."""
        return await once(cmd, lambda: self._run(cmd, delivery))

    async def _run(self, cmd: CreateMemory, delivery: int | None) -> Handled:
        args = parse_tool_args(cmd.tool_args)
        async with self._repo.session() as db:  # the read and the writes on one connection
            row = await db.create_context(cmd.command_id, cmd.workspace_id, lookup_ids(cmd, args),
                                          cmd.persona.lineage_id)
            step = self.step(cmd, args, row, delivery)
            while True:  # at most twice: a save that wrote nothing, then its refusal
                match step:
                    case Answered(handled):
                        return handled
                    case Refusal(result):
                        written = await db.record_result(cmd.command_id, cmd.workspace_id, result)
                    case Save(_, request):
                        written = await db.create_save(request)
                    case _:
                        assert_never(step)
                answer = self.written(cmd, step, written, delivery)
                if isinstance(answer, Handled):
                    return answer
                step = answer

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return encode(messages.db_error(cmd))
