"""The notice of a save that evicts, planned once, before the save: all but the forgotten content.

Which row is forgotten is known only inside the save's locked transaction, and the eviction
card shows it. So the planner (worker/domain/notice.py) plans the eviction notice here with an
empty forgotten content, and memory_create_batch(), having chosen the row, completes it in the
same transaction with memory_eviction_notice() (db/migrations/002_save_outcome.sql): the
card's "Forgotten" field, cut to the field limit as `truncate_field` cuts, and the expand
action and attachment, whose full text ends with the forgotten content. Those three pieces
are the planner's rule written again in SQL; tests/integration/test_eviction_notice.py holds
the SQL to `plan_notice` on a table of contents and settings, so a difference fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.commands import Channel
from worker.domain.notice import (
    Card,
    NoticePlan,
    NoticeSettings,
    NoticeSubject,
    card_of,
    full_text,
    plan_notice,
    truncate_field,
)

__all__ = ["EvictionNoticeTemplate", "eviction_template"]


@dataclass(frozen=True, slots=True)
class EvictionNoticeTemplate:
    notice: NoticePlan  # the plan as if the forgotten content were empty
    card: Card  # its card: Scope, Saved, Forgotten (the last one the database fills in)
    saved_cut: bool  # Scope or Saved was cut: the notice expands whatever is forgotten
    text_head: str  # the full text up to the forgotten content, which ends it


def eviction_template(settings: NoticeSettings, channel: Channel, scope_label: str, content_saved: str,
                      persona_name: str) -> EvictionNoticeTemplate:
    subject = NoticeSubject(kind="saved_with_eviction", scope_label=scope_label, content_saved=content_saved,
                            content_forgotten="", persona_name=persona_name)
    card, _ = card_of(subject)
    return EvictionNoticeTemplate(
        notice=plan_notice(settings, channel, subject),
        card=card,
        saved_cut=any(truncate_field(value)[1] for value in (scope_label, content_saved)),
        text_head=full_text(subject),
    )
