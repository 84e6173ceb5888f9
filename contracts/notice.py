"""The notice plan a save carries (docs/design.md, section 6): where the `memory_update` notice goes
and what each destination shows. The worker plans it (worker/domain/notice.py); the bot only
delivers it. Every key is always present; a destination the plan does not use is null.
TypedDicts, because the plan travels as a plain dict: the planner builds these, and the
schema comes from the same definitions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from msgspec import Meta

ThoughtLogSkipped = Literal["not_configured", "dm", "private", "listed_private", "not_readable_by_everyone"]
DroppedReason = Literal["hidden_key_no_thought_log", "hidden_key_non_public_channel"]


class CardField(TypedDict):
    """A field of the card: "Scope", "Saved" and, for an eviction, "Forgotten"; a value over
    Discord's 1024-character field limit is cut and ends in an ellipsis."""

    name: str
    value: str


class Card(TypedDict):
    """An embed: title, fields in order, and a footer naming the persona."""

    title: str
    fields: list[CardField]
    footer: str


class Expand(TypedDict):
    """An action showing the uncut text: as an embed description when it fits 4096
    characters, else as the ephemeral notice.txt attachment (description null)."""

    label: str
    delivery: Literal["description", "attachment"]
    description: str | None


class Attachment(TypedDict):
    """The uncut text as an ephemeral file, when it exceeds an embed description."""

    filename: Literal["notice.txt"]
    content: str
    ephemeral: Literal[True]


class ConversationNotice(TypedDict):
    """Post in the channel the command came from: the title only (mode title) or the card."""

    channel_id: str
    mode: Literal["title", "card"]
    title: str
    card: Card | None
    expand: Expand | None
    attachment: Attachment | None


class ThoughtLogNotice(TypedDict):
    """Post the full card in the workspace's thought-log channel, linking the source."""

    channel_id: str
    card: Card
    source_url: str | None
    expand: Expand | None
    attachment: Attachment | None


class NoticePlan(TypedDict):
    """Where the notice of a save goes. Both destinations null: it goes nowhere, and
    dropped_reason says why; thought_log_skipped says why the thought log got no copy."""

    version: Literal[1]
    key: Literal["memory_update"]
    verbosity: Literal["minimal", "verbose"]
    hidden: bool
    title: str
    conversation: ConversationNotice | None
    thought_log: ThoughtLogNotice | None
    thought_log_skipped: ThoughtLogSkipped | None
    dropped_reason: DroppedReason | None


# How results and events carry the plan: decoded as a plain dict (what Python clients have
# always read), published as a NoticePlan (contracts/schema.py puts NoticePlan in the $defs).
NoticeField = Annotated[dict[str, Any], Meta(extra_json_schema={"$ref": "#/$defs/NoticePlan"})] | None
