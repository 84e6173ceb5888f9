"""The notice planner of docs/design.md, section 6, as a pure function (no I/O).

The worker decides where a memory-save notice goes and what it says; the bot only delivers
the plan. The plan is a plain JSON-ready dict, carried unchanged in the result's `notice`
field (section 3.4) and in the `memory.saved` event's `notice` field (section 3.5).
A failed delivery is the bot's concern and never undoes the save.

The plan's shape is typed in contracts/notice.py (every key always present), from which the
published notice schema is generated. It is made in two steps: `route_notice`, before the save,
decides where the notice goes from the settings and the channel (a create's decision stores
that route); `plan_notice` completes it with what was saved and forgotten, whenever the
result is rendered.

Card fields, in order (worker/domain/notice_card.py): "Scope" (the scope label), "Saved" (the
saved content; "Updated" or "Deleted" for a memory.update) and, for an eviction, "Forgotten"
(the evicted content). A field value longer than Discord's embed field
limit (1024 characters) is cut to 1024 characters ending in "…", and the destination then
carries an `expand` action whose content is the full text (title, scope, persona, saved and
forgotten content, uncut). When that full text fits an embed description (4096 characters)
the action shows it as `description` (`delivery: "description"`); past that it is sent as an
ephemeral `notice.txt` attachment holding the full text (`delivery: "attachment"`,
`description: null`, and `attachment` set). Limits are counted in characters (code points).

Routing:

- Hidden key: `conversation` is null; the full card goes to the thought log only when one
  is configured and the command's channel is public; otherwise both destinations are null
  and `dropped_reason` says why.
- Minimal (default): the conversation gets the title only; the full card is mirrored to the
  thought log under the same public-channel rule.
- Verbose: the conversation gets the full card; the thought log gets no mirror.

A channel is public when it is not a DM, not flagged private, readable by everyone, and its
id is not in the workspace's `private_channel_ids`. `thought_log_skipped` tells why the
thought log got nothing when a copy was due (hidden or minimal); it is null in verbose mode
and when the copy was made. `dropped_reason` is set only when the notice goes nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from contracts.notice import (
    ConversationNotice,
    DroppedReason,
    Embed,
    Expand,
    NoticePlan,
    ThoughtLogNotice,
    ThoughtLogSkipped,
)
from contracts.tool_call import Channel
from worker.domain.notice_card import (
    DESCRIPTION_LIMIT,
    FIELD_VALUE_LIMIT,
    NOTICE_FILENAME,
    NoticeSubject,
    SubjectKind,
    card_of,
    expansion,
    full_text,
    scope_label,
    truncate_field,
)

__all__ = [
    "DESCRIPTION_LIMIT",
    "ConversationNotice",
    "Expand",
    "NoticePlan",
    "SubjectKind",
    "ThoughtLogNotice",
    "FIELD_VALUE_LIMIT",
    "NOTICE_FILENAME",
    "NOTICE_KEY",
    "NoticeRoute",
    "NoticeSettings",
    "NoticeSubject",
    "card_of",
    "channel_privacy",
    "full_text",
    "plan_notice",
    "route_notice",
    "scope_label",
    "truncate_field",
]

NOTICE_KEY: Final = "memory_update"
PLAN_VERSION: Final = 1
Verbosity = Literal["minimal", "verbose"]
ChannelPrivacy = Literal["dm", "private", "listed_private", "not_readable_by_everyone"]


@dataclass(frozen=True, slots=True)
class NoticeSettings:
    """The workspace's notice settings (the `servers` row; defaults when there is none)."""

    verbosity: Verbosity = "minimal"  # servers.tool_notice_verbosity
    hidden_keys: tuple[str, ...] = ()  # servers.tool_notice_hidden_keys
    thought_log_channel_id: str | None = None  # servers.thought_log_channel_id
    private_channel_ids: tuple[str, ...] = ()  # servers.private_channel_ids

    def __post_init__(self) -> None:
        if self.verbosity not in ("minimal", "verbose"):
            raise ValueError(f"notice verbosity must be minimal or verbose, not {self.verbosity!r}")
        # Database arrays arrive as lists; keep the value immutable and hashable.
        object.__setattr__(self, "hidden_keys", tuple(self.hidden_keys))
        object.__setattr__(self, "private_channel_ids", tuple(str(i) for i in self.private_channel_ids))

    def hides(self, key: str) -> bool:
        """Hidden keys match ignoring case and surrounding blanks."""
        wanted = key.strip().casefold()
        return any(k.strip().casefold() == wanted for k in self.hidden_keys)

    @property
    def thought_log(self) -> str | None:
        """The configured thought-log channel id; blank counts as not configured."""
        value = (self.thought_log_channel_id or "").strip()
        return value or None


def channel_privacy(channel: Channel, private_channel_ids: tuple[str, ...]) -> ChannelPrivacy | None:
    """Why the channel is not public, or None when it is."""
    if channel.is_dm:
        return "dm"
    if channel.is_private:
        return "private"
    if channel.id in private_channel_ids:
        return "listed_private"
    if not channel.everyone_can_view:
        return "not_readable_by_everyone"
    return None


class NoticeRoute(msgspec.Struct, frozen=True):
    """Where a save's notice goes, decided before the save from the workspace's settings and the
    command's channel (`route_notice`): all of the plan that does not depend on what was saved
    or forgotten. A create's decision stores it (worker/kinds/create/record.py), and its
    notice is planned from it and the subject whenever its result is rendered (`plan_notice`)."""

    verbosity: Verbosity
    hidden: bool
    conversation_channel_id: str | None  # set exactly when the key is not hidden
    thought_log_channel_id: str | None  # set exactly when the thought log gets the card
    source_url: str | None
    thought_log_skipped: ThoughtLogSkipped | None


def route_notice(settings: NoticeSettings, channel: Channel) -> NoticeRoute:
    """Routing: a hidden key posts nothing in the conversation, and the card goes to the thought
    log only from a public channel; minimal posts the title and mirrors the card under the same
    rule; verbose posts the card and mirrors nothing."""
    hidden = settings.hides(NOTICE_KEY)
    log_channel: str | None = None
    skipped: ThoughtLogSkipped | None = None
    if hidden or settings.verbosity == "minimal":
        privacy = channel_privacy(channel, settings.private_channel_ids)
        if settings.thought_log is None:
            skipped = "not_configured"
        elif privacy is not None:
            skipped = privacy
        else:
            log_channel = settings.thought_log
    return NoticeRoute(verbosity=settings.verbosity, hidden=hidden,
                       conversation_channel_id=None if hidden else channel.id, thought_log_channel_id=log_channel,
                       source_url=channel.url, thought_log_skipped=skipped)


def plan_notice(route: NoticeRoute, subject: NoticeSubject, embed: Embed) -> NoticePlan:
    """Where the `memory_update` notice of a save goes, and what each destination shows;
    `embed` is the same notice in the words of TomoriBot's embed helper
    (worker/domain/tool_texts.py's memory_embed).

    Always returns a plan (a plain dict, JSON-ready); a notice that goes nowhere has both
    destinations null and `dropped_reason` set.
    """
    card, truncated = card_of(subject)
    expand, attachment = expansion(subject, truncated)

    conversation: ConversationNotice | None = None
    if route.conversation_channel_id is not None:
        verbose = route.verbosity == "verbose"
        conversation = {
            "channel_id": route.conversation_channel_id,
            "mode": "card" if verbose else "title",
            "title": subject.title,
            "card": card if verbose else None,
            "expand": expand if verbose else None,
            "attachment": attachment if verbose else None,
        }

    thought_log: ThoughtLogNotice | None = None
    if route.thought_log_channel_id is not None:
        thought_log = {
            "channel_id": route.thought_log_channel_id,
            "card": card,
            "source_url": route.source_url,
            "expand": expand,
            "attachment": attachment,
        }

    dropped: DroppedReason | None = None
    if conversation is None and thought_log is None:
        no_log = route.thought_log_skipped == "not_configured"
        dropped = "hidden_key_no_thought_log" if no_log else "hidden_key_non_public_channel"

    return {
        "version": PLAN_VERSION,
        "key": NOTICE_KEY,
        "verbosity": route.verbosity,
        "hidden": route.hidden,
        "title": subject.title,
        "conversation": conversation,
        "thought_log": thought_log,
        "thought_log_skipped": route.thought_log_skipped,
        "dropped_reason": dropped,
        "embed": embed,
    }
