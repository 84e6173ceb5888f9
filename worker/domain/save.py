"""A create's one pass through the domain: the decision, and for a save what the locked
transaction stores when it writes.

`decide_save` runs `decide_create` (the checks before persistence) and, when they pass, plans
the save once, here: the plain save's notice and result, and for a save that may evict the
eviction's result, its notice template (worker/domain/eviction_notice.py) and the facts its
events will need. db/requests.py encodes the `CreateSave` as an op of memory_create_batch(),
which takes the owner's lock, chooses the outcome under it (worker/domain/outcome.py) and
fills in only what it alone knows (the new id, the victim). A save that ends writing nothing
is worded afterwards (`outcome.refused_under_lock`); the events are built after the save,
from what it stored (`events.create_events`).
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.commands import CreateMemory
from contracts.results import CommandResult
from worker.domain import messages
from worker.domain.arguments import InvalidArguments, ToolArguments
from worker.domain.create import decide_create
from worker.domain.events import EvictionFacts, SavedFacts, opaque_event_id
from worker.domain.eviction_notice import EvictionNoticeTemplate, eviction_template
from worker.domain.model import CreateContext, Limits, SavePlan
from worker.domain.notice import NoticeSettings, NoticeSubject, plan_notice
from worker.domain.proxy import is_synthetic_id

__all__ = ["CreateSave", "EvictionPlan", "decide_save", "save_request"]


@dataclass(frozen=True, slots=True)
class EvictionPlan:
    """What a save that may evict stores when it does: its result (the database sets the new
    id, the forgotten content and the notice, completed from `notice`), and the facts its
    events add (the eviction metric's opaque id, chosen here once)."""

    result: CommandResult
    notice: EvictionNoticeTemplate
    facts: EvictionFacts


@dataclass(frozen=True, slots=True)
class CreateSave:
    """A planned save with what it stores when it writes."""

    plan: SavePlan
    teacher_id: str | None  # Discord id of the person who taught it, when the bot named one
    proxy: bool  # a proxy identity: its hosts are checked again under the lock
    result: CommandResult  # a plain save's (memory_id 0: the database sets it)
    facts: SavedFacts  # what the events need that the result and command do not say
    eviction: EvictionPlan | None  # set exactly when the save may evict


def save_request(cmd: CreateMemory, plan: SavePlan, settings: NoticeSettings) -> CreateSave:
    scope_label = "server" if plan.scope == "server" else f"personal: {plan.target_label or plan.owner_id}"
    notice = plan_notice(settings, cmd.channel, NoticeSubject(
        kind="saved", scope_label=scope_label, content_saved=plan.content, content_forgotten=None,
        persona_name=cmd.persona.name))
    result = messages.saved(cmd, plan, 0, None)
    result.notice = dict(notice)
    eviction = None
    if plan.may_evict:
        eviction = EvictionPlan(
            result=messages.saved(cmd, plan, 0, ""),
            notice=eviction_template(settings, cmd.channel, scope_label, plan.content, cmd.persona.name),
            facts=EvictionFacts(decay_days=plan.decay_days, metric_event_id=opaque_event_id()),
        )
    return CreateSave(
        plan=plan,
        teacher_id=cmd.triggerer.id if cmd.triggerer else None,
        proxy=plan.scope == "personal" and is_synthetic_id(plan.owner_id),
        result=result,
        facts=SavedFacts(owner_id=plan.owner_id if plan.scope == "personal" else None),
        eviction=eviction,
    )


def decide_save(cmd: CreateMemory, args: ToolArguments | InvalidArguments, ctx: CreateContext, limits: Limits,
                settings: NoticeSettings) -> CommandResult | CreateSave:
    """A refusal to store, or the save to attempt; `args` is `parse_tool_args(cmd.tool_args)`."""
    decision = decide_create(cmd, args, ctx, limits)
    if isinstance(decision, CommandResult):
        return decision
    return save_request(cmd, decision, settings)
