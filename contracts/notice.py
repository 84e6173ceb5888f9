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
    Discord's 1024-character field limit is cut and ends in an ellipsis.

    Attributes:
        name: The field's name: Scope, Saved or Forgotten.
        value: Its value: the scope label ("server", "personal: <name>") or the memory's text,
            cut to 1024 characters; "(empty)" for an empty text, which Discord would reject.
    """

    name: str
    value: str


class Card(TypedDict):
    """An embed: title, fields in order, and a footer naming the persona.

    Attributes:
        title: The embed's title (the plan's title).
        fields: The embed's fields, in order.
        footer: The embed's footer: "Saved by <persona name>".
    """

    title: str
    fields: list[CardField]
    footer: str


class Expand(TypedDict):
    """An action showing the uncut text: as an embed description when it fits 4096
    characters, else as the ephemeral notice.txt attachment (description null).

    Attributes:
        label: The action's label (a button's text): "Show full text".
        delivery: description: show `description` (in an ephemeral embed, say); attachment:
            send the destination's `attachment` instead.
        description: The uncut text when delivery is description; null otherwise.
    """

    label: str
    delivery: Literal["description", "attachment"]
    description: str | None


class Attachment(TypedDict):
    """The uncut text as an ephemeral file, when it exceeds an embed description.

    Attributes:
        filename: Always notice.txt.
        content: The file's text: title, scope, persona, then the saved (and forgotten) text,
            uncut.
        ephemeral: Always true: show it only to the person who asked to expand.
    """

    filename: Literal["notice.txt"]
    content: str
    ephemeral: Literal[True]


class ConversationNotice(TypedDict):
    """Post in the channel the command came from: the title only (mode title) or the card.

    Attributes:
        channel_id: The command's channel.id.
        mode: title (minimal verbosity: post the title alone) or card (verbose: post the card).
        title: The text to post in title mode.
        card: The card to post; set exactly when mode is card.
        expand: Set when a card field was cut: offer this action to show the uncut text.
        attachment: Set when the uncut text exceeds 4096 characters: what the expand action
            sends.
    """

    channel_id: str
    mode: Literal["title", "card"]
    title: str
    card: Card | None
    expand: Expand | None
    attachment: Attachment | None


class ThoughtLogNotice(TypedDict):
    """Post the full card in the workspace's thought-log channel, linking the source.

    Attributes:
        channel_id: The workspace's thought-log channel.
        card: The full card (always, whatever the verbosity).
        source_url: The command's channel.url, to link the copy to its source; null when the
            command had none.
        expand: As for the conversation: set when a card field was cut.
        attachment: As for the conversation: set when the uncut text exceeds 4096 characters.
    """

    channel_id: str
    card: Card
    source_url: str | None
    expand: Expand | None
    attachment: Attachment | None


EmbedColor = Literal["success", "memory_update", "error"]
MemoryRefKind = Literal["server_memory", "personal_memory"]


class EmbedRef(TypedDict):
    """The memory a Minimal conversation notice stands for (TomoriBot's `MinimalNoticeRef`):
    what `recordMinimalNoticeRef(messageId, ref)` records once the title is posted.

    Attributes:
        kind: server_memory or personal_memory: which table id is from.
        id: The memory's server_memory_id or personal_memory_id.
    """

    kind: MemoryRefKind
    id: int


class Embed(TypedDict):
    """The notice in the words of TomoriBot's own embed helper (`sendMemoryEmbedWithExpand(context,
    options, fullMemoryContent, ref)`): its locale keys and variables, so a TomoriBot bot delivers
    the plan through the helper it already has, which renders the locale, the mentions, the
    600-character preview, the expand button and the Minimal/Verbose routing itself.

    Attributes:
        color: success (a memory learned), memory_update (updated) or error (deleted):
            TomoriBot's ColorCode.SUCCESS, MEMORY_UPDATE and ERROR.
        title_key: The title's locale key, e.g. genai.self_teach.server_memory_learned_title.
        title_vars: The title's variables: persona_nickname (the command's persona name) and,
            for a personal memory, user_nickname (the name the target was resolved to).
        description_key: The description's locale key, e.g.
            genai.self_teach.personal_memory_learned_description.
        description_vars: The description's variables: memory_content (the content as stored,
            placeholders such as {user} kept: the helper renders them and cuts the preview),
            user_nickname for a personal memory, memory_id for an update or a delete.
        footer_key: The footer's locale key: genai.self_teach.server_memory_footer for a server
            memory; for a personal one personal_memory_footer_personalization_disabled (personal
            memories are off in this workspace), personal_memory_footer_user_blacklisted (the
            person is blacklisted from personalization here) or personal_memory_footer_manage.
        full_content: The memory's whole content, as stored: what the expand button shows.
        ref: The memory the notice stands for, passed as the helper's ref (a create's save);
            null when there is none (a delete).
    """

    color: EmbedColor
    title_key: str
    title_vars: dict[str, str | int]
    description_key: str
    description_vars: dict[str, str | int]
    footer_key: str
    full_content: str
    ref: EmbedRef | None


class NoticePlan(TypedDict):
    """Where the notice of a save goes. Both destinations null: it goes nowhere, and
    dropped_reason says why; thought_log_skipped says why the thought log got no copy.

    Attributes:
        version: The plan's format version, 1; a new version is a new shape.
        key: The notice key, memory_update: what the workspace's hidden notice keys are matched
            against.
        verbosity: The workspace's notice verbosity the plan follows: minimal (the
            conversation gets the title, the thought log the card) or verbose (the conversation
            gets the card, no thought-log copy).
        hidden: True when memory_update is among the workspace's hidden notice keys: nothing
            goes to the conversation.
        title: "Memory saved", or "Memory saved (one forgotten to make room)" after an
            eviction.
        conversation: What to post in the command's channel; null when the key is hidden.
        thought_log: What to post in the thought-log channel; null when no copy is due or
            allowed.
        thought_log_skipped: Why the thought log got no copy although one was due (minimal or
            hidden): not_configured, or the channel's privacy (dm, private, listed_private,
            not_readable_by_everyone). null when the copy was made, and in verbose mode.
        dropped_reason: Set only when the notice goes nowhere (hidden key, and no thought-log
            copy): hidden_key_no_thought_log or hidden_key_non_public_channel.
        embed: The same notice as TomoriBot's embed helper takes it (keys, variables, footer,
            full content, ref), for a bot that delivers through that helper; added in issue 37,
            version still 1.
    """

    version: Literal[1]
    key: Literal["memory_update"]
    verbosity: Literal["minimal", "verbose"]
    hidden: bool
    title: str
    conversation: ConversationNotice | None
    thought_log: ThoughtLogNotice | None
    thought_log_skipped: ThoughtLogSkipped | None
    dropped_reason: DroppedReason | None
    embed: Embed


# How results and events carry the plan: decoded as a plain dict (what Python clients have
# always read), published as a NoticePlan (contracts/schema.py puts NoticePlan in the $defs).
NoticeField = Annotated[dict[str, Any], Meta(extra_json_schema={"$ref": "#/$defs/NoticePlan"})] | None
