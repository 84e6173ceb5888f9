"""The notice of a memory.update that changed a memory: the plan of docs/design.md, section 6
(routed before the lock, worker/domain/notice.py) with the embed TomoriBot's own helper takes
(`sendMemoryEmbedWithExpand`; worker/domain/tool_texts.py's memory_embed, shared with the
create): TomoriBot's update and delete notices of updateLongTermMemoryTool.ts@b0937881, their
footer variants, and like TomoriBot's no minimal-notice ref.
"""

from __future__ import annotations

from contracts.notice import NoticePlan
from worker.domain import tool_texts
from worker.domain.notice import NoticeSubject, SubjectKind, plan_notice, scope_label
from worker.kinds.update.record import UpdateOutcome, UpdatePlan, UpdateSettled

__all__ = ["update_notice"]


def _shown(plan: UpdatePlan, settled: UpdateSettled) -> str:
    """The text the notice shows: the new one, or the one deleted."""
    text = settled.content_before if settled.outcome == UpdateOutcome.DELETED else plan.content
    if text is None:
        raise ValueError(f"a notice of {settled.outcome} memory {plan.memory_id} without its text")
    return text


def update_notice(plan: UpdatePlan, settled: UpdateSettled) -> NoticePlan:
    """The notice of an edit or a delete that happened: what the result and its event carry.
    The personal footer names the target blacklisted when it is, or (in a guild) when its proxy
    host protects it (`settled.blacklisted`)."""
    deleted = settled.outcome == UpdateOutcome.DELETED
    personal = plan.scope == "personal"
    label = plan.target_label or plan.owner_id
    content = _shown(plan, settled)
    footer = tool_texts.footer_key(plan.scope, personalization_enabled=plan.personal_memories_enabled,
                                   blacklisted=settled.blacklisted)
    embed = tool_texts.memory_embed("deleted" if deleted else "updated", plan.scope,
                                    persona_nickname=plan.persona_name, user_nickname=label if personal else None,
                                    content=content, footer_key=footer, memory_id=plan.memory_id)
    kind: SubjectKind = "deleted" if deleted else "updated"
    return plan_notice(plan.notice, NoticeSubject(kind=kind, scope_label=scope_label(plan.scope, label),
                                                  content_saved=content, content_forgotten=None,
                                                  persona_name=plan.persona_name), embed)
