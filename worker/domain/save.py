"""A create's one pass through the domain: the decision, and for a save everything the locked
transaction may answer.

`decide_save` runs `decide_create` (the checks before persistence) and, when they pass, plans
the rest once, here: the plain save's notice, the finished result of every SaveOutcome
(worker/domain/outcome.py), the events, and for a save that may evict the eviction notice's
template (worker/domain/eviction_notice.py). db/requests.py encodes the `CreateSave` as the
argument of memory_create_save(), which takes the owner's lock, chooses the outcome under
it and fills in only what it alone knows (the new id, the victim, the count).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain.arguments import InvalidArguments, ToolArguments
from worker.domain.create import decide_create
from worker.domain.events import EventTemplate, save_events
from worker.domain.eviction_notice import EvictionNoticeTemplate, eviction_template
from worker.domain.model import CreateContext, Limits, SaveOutcome, SavePlan
from worker.domain.notice import NoticeSettings, NoticeSubject, plan_notice
from worker.domain.outcome import results_by_outcome
from worker.domain.proxy import is_synthetic_id

__all__ = ["CreateSave", "decide_save", "save_request"]


@dataclass(frozen=True, slots=True)
class CreateSave:
    """A planned save with the answer to each way it can end under the lock."""

    plan: SavePlan
    teacher_id: str | None  # Discord id of the person who taught it, when the bot named one
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    results: dict[SaveOutcome, CommandResult]
    events: list[EventTemplate]
    eviction_notice: EvictionNoticeTemplate | None  # set exactly when the save may evict


def save_request(cmd: CreateMemory, plan: SavePlan, now: datetime, settings: NoticeSettings) -> CreateSave:
    scope_label = "server" if plan.scope == "server" else f"personal: {plan.target_label or plan.owner_id}"
    notice = plan_notice(settings, cmd.channel, NoticeSubject(
        kind="saved", scope_label=scope_label, content_saved=plan.content, content_forgotten=None,
        persona_name=cmd.persona.name))
    return CreateSave(
        plan=plan,
        teacher_id=cmd.triggerer.id if cmd.triggerer else None,
        proxy=plan.scope == "personal" and is_synthetic_id(plan.owner_id),
        results=results_by_outcome(cmd, plan, notice),
        events=save_events(cmd, plan, now.isoformat(), notice=notice),
        eviction_notice=(eviction_template(settings, cmd.channel, scope_label, plan.content, cmd.persona.name)
                         if plan.may_evict else None),
    )


def decide_save(cmd: CreateMemory, args: ToolArguments | InvalidArguments, ctx: CreateContext, limits: Limits,
                now: datetime, settings: NoticeSettings) -> CommandResult | CreateSave:
    """A refusal to store, or the save to attempt; `args` is `parse_tool_args(cmd.tool_args)`."""
    decision = decide_create(cmd, args, ctx, limits)
    if isinstance(decision, CommandResult):
        return decision
    return save_request(cmd, decision, now, settings)
