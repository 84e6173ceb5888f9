"""The worker's own card of a memory notice (docs/design.md, section 6): its title, its fields
("Scope", the text saved, updated or deleted, and for an eviction "Forgotten"), its footer, the
cut at Discord's limits and the expand action with the full text. Pure; worker/domain/notice.py
routes the card and puts it into the plan (TomoriBot's own embed is tool_texts.memory_embed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from contracts.notice import Attachment, Card, CardField, Expand
from worker.domain.scope import Scope

__all__ = [
    "DESCRIPTION_LIMIT",
    "FIELD_VALUE_LIMIT",
    "NOTICE_FILENAME",
    "NoticeSubject",
    "SubjectKind",
    "card_of",
    "expansion",
    "full_text",
    "scope_label",
    "truncate_field",
]

# Discord's embed limits.
FIELD_VALUE_LIMIT = 1024
DESCRIPTION_LIMIT = 4096
NOTICE_FILENAME: Final = "notice.txt"
ELLIPSIS = "…"
EMPTY_VALUE = "(empty)"  # Discord rejects an empty field value
EXPAND_LABEL = "Show full text"

TITLE_SAVED = "Memory saved"
TITLE_SAVED_WITH_EVICTION = "Memory saved (one forgotten to make room)"

SubjectKind = Literal["saved", "saved_with_eviction", "updated", "deleted"]  # updated, deleted: memory.update
# Each kind's title, the name of the field holding its text, and the footer's verb.
_WORDS: dict[str, tuple[str, str, str]] = {
    "saved": (TITLE_SAVED, "Saved", "Saved by"), "saved_with_eviction": (TITLE_SAVED_WITH_EVICTION, "Saved", "Saved by"),
    "updated": ("Memory updated", "Updated", "Updated by"), "deleted": ("Memory deleted", "Deleted", "Deleted by")}


def scope_label(scope: Scope, owner_label: str) -> str:
    """The card's Scope line: "server", or "personal: " and whose memory it is."""
    return "server" if scope == "server" else f"personal: {owner_label}"


@dataclass(frozen=True, slots=True)
class NoticeSubject:
    """What happened: a save, possibly with the one memory it replaced; or an edit or a delete
    (`content_saved` is then the new text, or the deleted one)."""

    kind: SubjectKind
    scope_label: str  # e.g. "server", "personal: Mika"
    content_saved: str
    content_forgotten: str | None
    persona_name: str

    def __post_init__(self) -> None:
        if self.kind == "saved_with_eviction":
            if self.content_forgotten is None:
                raise ValueError("an eviction notice needs the forgotten content")
        elif self.kind in _WORDS:
            if self.content_forgotten is not None:
                raise ValueError(f"a {self.kind} notice has no forgotten content")
        else:
            raise ValueError(f"unknown notice subject kind {self.kind!r}")

    @property
    def title(self) -> str:
        return _WORDS[self.kind][0]


def truncate_field(value: str, limit: int = FIELD_VALUE_LIMIT) -> tuple[str, bool]:
    """The value as an embed field shows it, and whether it was cut."""
    if not value:
        return EMPTY_VALUE, False
    if len(value) <= limit:
        return value, False
    return value[: limit - len(ELLIPSIS)].rstrip() + ELLIPSIS, True


def full_text(subject: NoticeSubject) -> str:
    """The uncut notice as plain text: what the expand action and notice.txt deliver."""
    parts = [
        subject.title,
        f"Scope: {subject.scope_label}",
        f"Persona: {subject.persona_name}",
        "",
        f"{_WORDS[subject.kind][1]}:",
        subject.content_saved,
    ]
    if subject.content_forgotten is not None:
        parts += ["", "Forgotten:", subject.content_forgotten]
    return "\n".join(parts)


def card_of(subject: NoticeSubject) -> tuple[Card, bool]:
    title, text_name, footer_verb = _WORDS[subject.kind]
    values = [("Scope", subject.scope_label), (text_name, subject.content_saved)]
    if subject.content_forgotten is not None:
        values.append(("Forgotten", subject.content_forgotten))
    fields: list[CardField] = []
    truncated = False
    for name, raw in values:
        value, cut = truncate_field(raw)
        truncated = truncated or cut
        fields.append({"name": name, "value": value})
    card: Card = {"title": title, "fields": fields, "footer": f"{footer_verb} {subject.persona_name}"}
    return card, truncated


def expansion(subject: NoticeSubject, truncated: bool) -> tuple[Expand | None, Attachment | None]:
    if not truncated:
        return None, None
    text = full_text(subject)
    if len(text) <= DESCRIPTION_LIMIT:
        return {"label": EXPAND_LABEL, "delivery": "description", "description": text}, None
    expand: Expand = {"label": EXPAND_LABEL, "delivery": "attachment", "description": None}
    return expand, {"filename": NOTICE_FILENAME, "content": text, "ephemeral": True}
