"""The notice of a memory.update that changed a memory: the plan of docs/design.md, section 6
(routed before the lock, worker/domain/notice.py) with the embed TomoriBot's own helper takes
(`sendMemoryEmbedWithExpand`, contracts/notice.py's Embed): TomoriBot's update and delete
notices of updateLongTermMemoryTool.ts@b0937881, their locale keys, variables, colors and
footer variants. Like TomoriBot's, an update's and a delete's notice record no minimal-notice
ref.
"""

from __future__ import annotations

from contracts.notice import Embed, NoticePlan
from worker.domain.notice import NoticeSubject, SubjectKind, plan_notice
from worker.domain.update_decision import UpdateFacts, UpdateOutcome, UpdatePlan

__all__ = ["footer_key", "memory_embed", "update_notice"]

_KEYS = "genai.self_teach."


def footer_key(plan: UpdatePlan, facts: UpdateFacts) -> str:
    """The server footer, or the first personal one that applies: personalization off, the target
    blacklisted (or its proxy host protecting it, in a guild), else how to manage them."""
    if plan.scope == "server":
        return f"{_KEYS}server_memory_footer"
    if not plan.personal_memories_enabled:
        return f"{_KEYS}personal_memory_footer_personalization_disabled"
    if facts.blacklisted:
        return f"{_KEYS}personal_memory_footer_user_blacklisted"
    return f"{_KEYS}personal_memory_footer_manage"


def _shown(plan: UpdatePlan, facts: UpdateFacts) -> str:
    """The text the notice shows: the new one, or the one deleted."""
    text = facts.content_before if facts.outcome == UpdateOutcome.DELETED else plan.content
    if text is None:
        raise ValueError(f"a notice of {facts.outcome} memory {plan.memory_id} without its text")
    return text


def memory_embed(plan: UpdatePlan, facts: UpdateFacts) -> Embed:
    deleted = facts.outcome == UpdateOutcome.DELETED
    verb = "deleted" if deleted else "updated"
    content = _shown(plan, facts)
    # TomoriBot passes `memoryId.toString()`: the id is a string variable.
    title_vars: dict[str, str | int] = {"persona_nickname": plan.persona_name}
    description_vars: dict[str, str | int] = {"memory_id": str(plan.memory_id), "memory_content": content}
    if plan.scope == "personal":
        label = plan.target_label or plan.owner_id
        title_vars = {"user_nickname": label, **title_vars}
        description_vars = {"user_nickname": label, **description_vars}
    table = "server" if plan.scope == "server" else "personal"
    return {
        "color": "error" if deleted else "memory_update",
        "title_key": f"{_KEYS}{table}_memory_{verb}_title",
        "title_vars": title_vars,
        "description_key": f"{_KEYS}{table}_memory_{verb}_description",
        "description_vars": description_vars,
        "footer_key": footer_key(plan, facts),
        "full_content": content,
        "ref": None,
    }


def update_notice(plan: UpdatePlan, facts: UpdateFacts) -> NoticePlan:
    """The notice of an edit or a delete that happened: what the result and its event carry."""
    scope_label = "server" if plan.scope == "server" else f"personal: {plan.target_label or plan.owner_id}"
    kind: SubjectKind = "deleted" if facts.outcome == UpdateOutcome.DELETED else "updated"
    notice = plan_notice(plan.notice, NoticeSubject(kind=kind, scope_label=scope_label,
                                                    content_saved=_shown(plan, facts), content_forgotten=None,
                                                    persona_name=plan.persona_name))
    notice["embed"] = memory_embed(plan, facts)
    return notice
