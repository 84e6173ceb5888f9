"""memory.create: read the context, decide (pure), persist in one transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
import msgspec

from contracts.codec import encode
from contracts.commands import CreateMemory
from contracts.results import CommandResult
from db.repository import CreateContextRow, MemoryRepository, Stored
from worker.domain import messages
from worker.domain.create import at_cap_refusal, decide_create, eviction_block_reason, over_cap_refusal
from worker.domain.events import EventTemplate, save_events
from worker.domain.model import CreateContext, KnownUser, Limits, ProxyIdentity, SavePlan
from worker.domain.notice import NoticeSettings, NoticeSubject, plan_notice
from worker.domain.proxy import is_synthetic_id
from worker.domain.targets import lookup_ids
from worker.services import rows
from worker.services.base import Handled, answer_repeat, is_inbox_conflict


class SaveResults(msgspec.Struct, frozen=True):
    saved: CommandResult
    evicted: CommandResult
    at_cap: CommandResult
    over_cap: CommandResult
    privacy_1: CommandResult
    privacy_2: CommandResult
    host_protected: CommandResult


class CreateSaveRequest(msgspec.Struct, frozen=True):
    """The argument of memory_create_save(): the plan, every possible result, every event."""

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
    results: SaveResults
    events: list[EventTemplate]


def context_from_row(row: CreateContextRow) -> CreateContext:
    users = {u.disc_id: KnownUser(u.user_id, u.disc_id, u.nickname, u.privacy_level) for u in row.users}
    nicknames = {u.disc_id: u.persona_nickname for u in row.users if u.persona_nickname}
    proxies = {u.disc_id: ProxyIdentity(u.user_id, u.disc_id, rows.hosts(u.proxy_hosts))
               for u in row.users if u.proxy_hosts is not None}
    return CreateContext(workspace=rows.workspace(row.workspace), users=users, persona_nicknames=nicknames,
                         proxies=proxies)


def plan_save_notice(cmd: CreateMemory, plan: SavePlan, settings: NoticeSettings,
                     forgotten: str | None) -> dict:
    scope_label = "server" if plan.scope == "server" else f"personal: {plan.target_label or plan.owner_id}"
    subject = NoticeSubject(kind="saved" if forgotten is None else "saved_with_eviction", scope_label=scope_label,
                            content_saved=plan.content, content_forgotten=forgotten,
                            persona_name=cmd.persona.name)
    return dict(plan_notice(settings, cmd.channel, subject))


class _Forgotten(msgspec.Struct):
    content_forgotten: str | None = None


class _EvictionProbe(msgspec.Struct):
    data: _Forgotten


_EVICTION = msgspec.json.Decoder(_EvictionProbe)


def save_request(cmd: CreateMemory, plan: SavePlan, ctx: CreateContext, now: datetime,
                 settings: NoticeSettings) -> CreateSaveRequest:
    why_not = None if plan.may_evict else eviction_block_reason(ctx.workspace, cmd.retrieval)
    notice = plan_save_notice(cmd, plan, settings, None)
    saved = messages.saved(cmd, plan, 0, None)
    saved.notice = notice
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
        results=SaveResults(
            saved=saved,
            # Its notice shows the forgotten content: set under the lock (see CreateMemoryService).
            evicted=messages.saved(cmd, plan, 0, ""),
            at_cap=at_cap_refusal(cmd, plan, why_not),
            over_cap=over_cap_refusal(cmd, plan),
            # The database reads privacy again under the lock; these are its answers if it changed.
            privacy_1=messages.privacy_restricted(cmd, plan.target_label or plan.owner_id, 1),
            privacy_2=messages.privacy_restricted(cmd, plan.target_label or plan.owner_id, 2),
            host_protected=messages.host_protected(cmd, plan.target_label or plan.owner_id,
                                                   "a host's protection changed while saving"),
        ),
        events=save_events(cmd, plan, now.isoformat(), notice=notice),
    )


@dataclass(frozen=True, slots=True)
class CreateStep:
    """A create after its context is read and the pure decision made: answered already (a
    repeat), a refusal to store, or a save (memory_create_save()'s argument)."""

    answer: Handled | None = None
    refusal: bytes | None = None
    request: bytes | None = None
    owner: tuple[str, str] | None = None  # (scope, owner id): the lock the save takes
    # Set for a save that may evict: the notice filled in under the lock (see run()).
    eviction_notice: Callable[[bytes], bytes | None] | None = None


class CreateMemoryService:
    def __init__(self, repo: MemoryRepository, limits: Limits) -> None:
        self._repo = repo
        self._limits = limits

    def step(self, cmd: CreateMemory, row: CreateContextRow) -> CreateStep:
        stored = MemoryRepository.stored_or_none(row)
        if stored is not None:
            return CreateStep(answer=answer_repeat(cmd, Stored(stored, row.stored_workspace, row.pending)))
        ctx = context_from_row(row)
        decision = decide_create(cmd, ctx, self._limits)
        if isinstance(decision, CommandResult):
            return CreateStep(refusal=encode(decision))
        settings = rows.notice_settings(row.workspace)
        request = encode(save_request(cmd, decision, ctx, datetime.now(UTC), settings))

        def eviction_notice(result: bytes) -> bytes | None:
            forgotten = _EVICTION.decode(result).data.content_forgotten
            return None if forgotten is None else encode(plan_save_notice(cmd, decision, settings, forgotten))

        return CreateStep(request=request, owner=(decision.scope, decision.owner_id),
                          eviction_notice=eviction_notice if decision.may_evict else None)

    async def run(self, cmd: CreateMemory, *, raced: bool = False) -> Handled:
        row = await self._repo.create_context(cmd.command_id, cmd.workspace_id, lookup_ids(cmd),
                                              cmd.persona.lineage_id)
        step = self.step(cmd, row)
        if step.answer is not None:
            return step.answer
        if step.refusal is not None:
            duplicate, stored = await self._repo.record_result(cmd.command_id, "create", cmd.workspace_id,
                                                               step.refusal)
            return Handled(stored, [], duplicate)
        try:
            saved = await self._repo.create_save(cmd.command_id, step.request, step.eviction_notice)
        except asyncpg.UniqueViolationError as exc:
            # A concurrent delivery of this command stored a refusal (which takes no lock) first;
            # the save rolled back whole, and the stored result is the answer: one more run
            # reads it. Any other constraint, or a second race, is a failure like any other.
            if raced or not is_inbox_conflict(exc):
                raise
            return await self.run(cmd, raced=True)
        return Handled(bytes(saved.result), saved.outbox, saved.duplicate)

    def failure_result(self, cmd: CreateMemory) -> bytes:
        return encode(messages.db_error(cmd))
