"""memory.create, top to bottom: read the context, decide (pure), write in one transaction.

1. Context: memory_create_context() reads in one statement all the pure decision needs, and
   whether the command was seen before (seen_before() decides what that means).
2. Decision: decide_create() refuses with a finished result, or plans a save; the save
   request then carries the finished result of every SaveOutcome (worker/domain/outcome.py),
   the events, and for a save that may evict the eviction notice's template
   (worker/domain/eviction_notice.py): the notice is planned once, here.
3. Transaction: a refusal is stored (memory_record_result); a save is memory_create_save(),
   which takes the owner's lock, chooses the outcome under it, completes the eviction notice
   and stores the result: one statement, evicting or not.

worker/services/create_batch.py runs steps 1 and 3 for many commands in one round trip each;
step() is the part both share.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec

from contracts.codec import encode
from contracts.commands import CreateMemory
from contracts.results import CommandResult
from db.repository import CreateContextRow, MemoryRepository, SaveRow
from worker.domain import messages
from worker.domain.create import decide_create, eviction_block_reason
from worker.domain.events import EventTemplate, save_events
from worker.domain.eviction_notice import EvictionNoticeTemplate, eviction_template
from worker.domain.model import CreateContext, KnownUser, Limits, ProxyIdentity, SavePlan
from worker.domain.notice import NoticeSettings, NoticeSubject, plan_notice
from worker.domain.outcome import SaveOutcome, results_by_outcome
from worker.domain.proxy import is_synthetic_id
from worker.domain.targets import lookup_ids
from worker.services import rows
from worker.services.base import Handled, once, seen_before


class CreateSaveRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_save(): the plan, the result of every outcome, the events."""

    command_id: str
    scope: str
    owner_id: str
    workspace_id: str
    user_id: int | None
    teacher_id: str | None
    lineage_id: int
    persona_id: int
    content: str
    source: str
    manually_written: bool
    cap: int
    may_evict: bool
    decay_days: int
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    results: dict[SaveOutcome, CommandResult]
    events: list[EventTemplate]
    eviction_notice: EvictionNoticeTemplate | None  # set exactly when the save may evict


def context_from_row(row: CreateContextRow) -> CreateContext:
    users = {u.disc_id: KnownUser(u.user_id, u.disc_id, u.nickname, u.privacy_level) for u in row.users}
    nicknames = {u.disc_id: u.persona_nickname for u in row.users if u.persona_nickname}
    proxies = {u.disc_id: ProxyIdentity(u.user_id, u.disc_id, rows.hosts(u.proxy_hosts))
               for u in row.users if u.proxy_hosts is not None}
    return CreateContext(workspace=rows.workspace(row.workspace), users=users, persona_nicknames=nicknames,
                         proxies=proxies)


def save_request(cmd: CreateMemory, plan: SavePlan, ctx: CreateContext, now: datetime,
                 settings: NoticeSettings) -> CreateSaveRequest:
    why_not = None if plan.may_evict else eviction_block_reason(ctx.workspace, cmd.retrieval)
    scope_label = "server" if plan.scope == "server" else f"personal: {plan.target_label or plan.owner_id}"
    notice = dict(plan_notice(settings, cmd.channel, NoticeSubject(
        kind="saved", scope_label=scope_label, content_saved=plan.content, content_forgotten=None,
        persona_name=cmd.persona.name)))
    return CreateSaveRequest(
        command_id=cmd.command_id,
        scope=plan.scope,
        owner_id=plan.owner_id,
        workspace_id=cmd.workspace_id,
        user_id=plan.user_id,
        teacher_id=cmd.triggerer.id if cmd.triggerer else None,
        lineage_id=plan.lineage_id,
        persona_id=plan.persona_id,
        content=plan.content,
        source="model",
        manually_written=False,
        cap=plan.cap,
        may_evict=plan.may_evict,
        decay_days=plan.decay_days,
        proxy=plan.scope == "personal" and is_synthetic_id(plan.owner_id),
        results=results_by_outcome(cmd, plan, why_not, notice),
        events=save_events(cmd, plan, now.isoformat(), notice=notice),
        eviction_notice=(eviction_template(settings, cmd.channel, scope_label, plan.content, cmd.persona.name)
                         if plan.may_evict else None),
    )


@dataclass(frozen=True, slots=True)
class CreateStep:
    """A create after its context is read and the pure decision made: answered already (a
    repeat), a refusal to store, or a save (memory_create_save()'s argument)."""

    answer: Handled | None = None
    refusal: bytes | None = None
    request: bytes | None = None
    owner: tuple[str, str] | None = None  # (scope, owner id): the lock the save takes


class CreateMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits) -> None:
        self._repo = repo
        self._limits = limits

    def step(self, cmd: CreateMemory, row: CreateContextRow) -> CreateStep:
        answer = seen_before(cmd, self._repo.stored_of(row), self._repo.tenant)
        if answer is not None:
            return CreateStep(answer=answer)
        ctx = context_from_row(row)
        decision = decide_create(cmd, ctx, self._limits)
        if isinstance(decision, CommandResult):
            return CreateStep(refusal=encode(decision))
        request = save_request(cmd, decision, ctx, datetime.now(UTC), rows.notice_settings(row.workspace))
        return CreateStep(request=encode(request), owner=(decision.scope, decision.owner_id))

    def handled(self, cmd: CreateMemory, row: SaveRow) -> Handled:
        """What a write returned: the command's own result, or the answer to a repeat it found."""
        if row.duplicate:
            answer = seen_before(cmd, self._repo.stored_by_save(row), self._repo.tenant)
            assert answer is not None  # a stored result was found
            return answer
        return Handled(bytes(row.result), row.outbox, duplicate=False)

    async def run(self, cmd: CreateMemory) -> Handled:
        return await once(cmd, lambda: self._run(cmd))

    async def _run(self, cmd: CreateMemory) -> Handled:
        row = await self._repo.create_context(cmd.command_id, cmd.workspace_id, lookup_ids(cmd),
                                              cmd.persona.lineage_id)
        step = self.step(cmd, row)
        if step.answer is not None:
            return step.answer
        if step.refusal is not None:
            written = await self._repo.record_result(cmd.command_id, "create", cmd.workspace_id, step.refusal)
        else:
            assert step.request is not None
            written = await self._repo.create_save(step.request)
        return self.handled(cmd, written)

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return encode(messages.db_error(cmd))
