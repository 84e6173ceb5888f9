"""Commands bots send to the worker (docs/design.md, sections 3.2, 3.3 and 8)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from contracts.decoding import CommandDecoder

# The reply rule lives with the subject grammar; named here too, as the contract's own.
from contracts.subjects import DEFAULT_REPLY_PREFIXES as DEFAULT_REPLY_PREFIXES
from contracts.subjects import REPLY_SUBJECT_MAX, REPLY_SUBJECT_PATTERN
from contracts.subjects import is_reply_subject as is_reply_subject

# PostgreSQL text and jsonb cannot hold NUL: a string with one is refused at decoding, with
# the field's path, instead of failing the database on every retry.
_NO_NUL = r"^[^\x00]*$"
CommandId = Annotated[str, Meta(min_length=1, max_length=128, pattern=_NO_NUL)]
DiscordId = Annotated[str, Meta(min_length=1, max_length=64, pattern=_NO_NUL)]
ShortText = Annotated[str, Meta(max_length=512, pattern=_NO_NUL)]
REPLY_SUBJECT_RULE = (
    "reply_to must start with one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`; a bot under "
    "per-role permissions has its own prefix, which the operator adds). The worker publishes nowhere else: "
    "a command whose reply_to is not allowed is not applied, gets no reply, and is dead-lettered with reason "
    "invalid_command; the result lookup then answers outcome dead_lettered with reply_to_allowed false. "
    "A result lookup's own reply subject is held to the same prefixes: a lookup asking to be answered "
    "anywhere else gets no answer.")
ReplySubject = Annotated[str, Meta(
    max_length=REPLY_SUBJECT_MAX, pattern=REPLY_SUBJECT_PATTERN,
    description="A NATS subject (no wildcards) the worker publishes the result to. " + REPLY_SUBJECT_RULE)]
IssuedAt = Annotated[datetime, Meta(extra_json_schema={"format": "date-time"})]
# Ids of the bot's database: PostgreSQL integer columns.
Int32 = Annotated[int, Meta(ge=0, le=2**31 - 1)]
# Persona lineages: TomoriBot's lineage columns are bigint (widened from int32, additively).
LineageId = Annotated[int, Meta(ge=0, le=2**63 - 1)]
MemoryId = Annotated[int, Meta(ge=1, le=2**63 - 1)]


class Envelope(Struct, kw_only=True, frozen=True):
    """Fields every command carries.

    Attributes:
        command_id: The command's identity, unique per logical command (a UUID is a good
            choice). The worker applies a command_id at most once and answers every repeat with
            the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header
            so JetStream drops a repeat inside its duplicate window.
        issued_at: When the bot issued the command (RFC 3339), set by the bot. Informational:
            the worker processes a workspace's commands in publish order, never by this time.
        reply_to: Where the worker publishes the result: a NATS subject under one of the
            operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply
            inbox, subscribed before the publish. null: the command is applied and nobody is
            answered. A subject outside the prefixes is never published to: the command is
            dead-lettered unapplied (see the result lookup).
        workspace_id: The Discord guild id, or the user's id in a direct message: whose server
            memories, settings and directory rows the command uses. It must equal the last token
            of the subject the command is published to (memory.<kind>.<workspace token>), or the
            command is refused as invalid.
        dry_run: True: decide without effect (shadow mode, docs/design.md section 3.6). The
            worker runs the command as it would (the owner's lock, the same context, the same
            decision) and answers the result it would have given, but writes no memory,
            publishes no event and stores no result: the command_id is not used up, and a
            later real command with it is applied as new. The answer is kept for the shadow
            report (memory.shadow) instead. A memory id the command would have created is the
            one the table's sequence would give next, a guess a concurrent write can beat.
            Bad input and refusals are answered exactly as for a real command.
    """

    command_id: CommandId
    issued_at: IssuedAt
    reply_to: ReplySubject | None = None
    workspace_id: DiscordId
    dry_run: bool = False


class ReplyProbe(Struct):
    """The least a broken command may still tell us: where to send the refusal (never published)."""

    command_id: Any = None
    reply_to: Any = None


class AffixVariants(Struct, frozen=True, kw_only=True):
    """A naming affix per addressing style (TomoriBot's `Partial<Record<AddressingStyle, string>>`).

    Attributes:
        masculine: The affix for people addressed as masculine; null or absent: none set.
        feminine: The affix for people addressed as feminine; null or absent: none set.
        neutral: The affix for everyone else, and for a style with none set.
    """

    masculine: ShortText | None = None
    feminine: ShortText | None = None
    neutral: ShortText | None = None


class PersonaNaming(Struct, frozen=True, kw_only=True):
    """How the persona composes people's names (TomoriBot's `PersonaNamingConfig`, the
    `persona_naming_configs` row of the speaking persona, `tomoriState.naming_config`).

    Attributes:
        prefixes: The title put before a name (e.g. neutral "Master"), per addressing style.
        suffixes: The honorific put after a name (e.g. neutral "-san"), per addressing style.
    """

    prefixes: AffixVariants = AffixVariants()
    suffixes: AffixVariants = AffixVariants()


class Persona(Struct, frozen=True):
    """The persona that is speaking and made the tool call.

    Attributes:
        id: The persona's row id in the bot's database (TomoriBot: tomoriState.persona_id).
            Stored on a server memory as the persona that taught it; it does not decide which
            memories count together (the lineage does). 0 means the bot has none: a create is
            refused with memory_save_failed_internal_error (critical state missing).
        lineage_id: The persona's lineage: memories are kept, counted against the caps and
            evicted per lineage, so every version of a persona that shares a lineage shares its
            memories. Must not be 0, which is reserved for a user's global memories: a create
            with lineage 0 is refused with memory_save_failed_internal_error.
        name: The persona's display name (TomoriBot's personaNickname), shown in the notice:
            the embed's persona_nickname, the card's footer "Saved by <name>".
        naming: The persona's naming affixes: target_user is also tried with one of them taken
            off, and people's composed names ("Master Mika") are rebuilt with them. null or
            absent: the persona has none.
    """

    id: Int32
    lineage_id: LineageId
    name: ShortText
    naming: PersonaNaming | None = None


class Triggerer(Struct, frozen=True):
    """The person whose message started the turn in which the model called the tool.

    Attributes:
        id: Their id as TomoriBot's resolveTriggererDiscordId gives it (context.userId: a
            Discord user id, or a proxy identity's id for a proxied message). They must have a
            users row: without one (or without a triggerer) a create is refused with
            memory_save_failed_internal_error, as TomoriBot does. A server memory the model saves
            is recorded as taught by them: without being a manager they can then see and remove
            it in /memories (and edit it while member teaching is on). It does not choose the
            memory's target (tool_args.target_user does).
        name: Their display name, as the bot showed it to the model.
    """

    id: DiscordId
    name: ShortText


class Channel(Struct, frozen=True, kw_only=True):
    """The channel the tool call came from: it decides where the save's notice may go.

    A channel is public only when it is not a DM, not private, readable by everyone and not in
    the workspace's private channel list. Only a save from a public channel is mirrored to the
    thought-log channel; the conversation notice always goes to this channel (unless the
    memory_update notice is hidden).

    Attributes:
        id: The Discord id of the channel or thread the conversation is in: the conversation
            notice's channel_id.
        is_dm: True in a direct message with the bot. A DM is never public (no thought-log copy),
            and target resolution stops after the conversation's participants (there is no
            member search in a DM).
        is_private: True when the channel's audience is restricted in a way the other fields do
            not say: a private thread, or a thread whose parent channel is on the workspace's
            private channel list (the worker compares only id with that list). No thought-log
            copy.
        everyone_can_view: False unless every member of the guild can read the channel: @everyone
            has View Channel and no role or member is denied it (for a thread, on its parent).
            Otherwise no thought-log copy, so the thought log never shows what not everyone may
            read. Defaults to true: a bot that cannot tell should send false.
        url: A link to the message (or channel) the save came from, shown as the thought-log
            copy's link to its source; null when there is none.
    """

    id: DiscordId
    is_dm: bool = False
    is_private: bool = False
    everyone_can_view: bool = True
    url: ShortText | None = None


class Participant(Struct, frozen=True, kw_only=True):
    """Someone in the conversation the model may name as target_user: one of TomoriBot's
    conversation user references (`projectConversationUserReferences` of the context's
    participant target index: a target with an id and at least one tool_target alias).

    Attributes:
        id: The reference's targetId: a Discord user id, a Matrix id (`@local:server`) for a
            bridge user, or a proxy identity's id (`pk:<uuid>`, `pb:<digits>`, or a custom
            instance's `<prefix>i:<length>:<instance>:<key>`). target_user equal to it
            (exactly, after trimming) resolves to this participant.
        kind: discord, matrix (a bridge user: a save about them becomes a server memory with
            `{user}` replaced by their name, since bridge accounts have no user rows) or proxy
            (a message-proxy identity: saved as its own personal memory, only if every host
            account allows it). An id shaped like a Matrix id is a bridge user and one shaped
            like a proxy id is a proxy identity, whatever the kind says.
        label: The reference's displayLabel: the name the target resolves under (in the
            reasons, target_user and the notice), and the primary marker: when target_user
            matches several participants' aliases, the one whose label it also is wins.
        primary_label: Not read since issue 37 (TomoriBot marks the primary name by the label);
            kept for bots that send it.
        aliases: The reference's aliases, the tool_target ones in TomoriBot's priority order
            (the impersonated identity's name, the saved nickname when exposed, the guild
            nickname, the global name, the username; the Discord id when nothing else; the
            persona nickname for a persona, the display name for a bridge user). target_user
            is matched against these only (after trimming, dropping leading `@`, lowercasing
            and collapsing spaces): include the label when it is one of them.
    """

    id: Annotated[str, Meta(min_length=1, max_length=256, pattern=_NO_NUL)]
    kind: Literal["discord", "matrix", "proxy"] = "discord"
    label: ShortText = ""
    primary_label: ShortText | None = None
    aliases: Annotated[list[ShortText], Meta(max_length=64)] = []


class MemberMatch(Struct, frozen=True, kw_only=True):
    """A guild member the bot found for the target_user name (none in a DM).

    They stand for what TomoriBot's resolver gets from the guild, which the worker cannot
    reach: (1) for a target_user that is a Discord id, the member with that id
    (guild.members.fetch); (2) the member search for the name (guild.members.search with the
    target_user text, limit 100), and again for the name with one of the persona's naming
    affixes taken off; (3) the members TomoriBot's database stages fetch by id: those whose
    persona nickname for this lineage, saved nickname, or composed name matches the name (run
    the bot's own naming look-ups for the input, and fetch those members). After the
    conversation's participants, target_user is compared, exactly and after normalizing, with
    these members' display names, then their persona nicknames and saved nicknames (read from
    the database), then global names, then usernames, then with an affix off the same way, then
    with their composed names: the first stage with any match decides, and several distinct
    members there make the save ambiguous.

    Attributes:
        id: The member's Discord user id.
        display_name: The name the guild shows for them (discord.js GuildMember.displayName: the
            guild nickname, else the global name, else the username); null falls back to
            nickname, global_name and username in that order.
        nickname: Their guild nickname, if any.
        global_name: Their Discord global display name, if any.
        username: Their unique Discord username: a target resolved through this member is
            labelled `display name (@username)` unless the two are the same ignoring case.
        is_bot: True for bot accounts, which are never memory targets (they are skipped).
    """

    id: DiscordId
    display_name: ShortText | None = None
    nickname: ShortText | None = None
    global_name: ShortText | None = None
    username: ShortText | None = None
    is_bot: bool = False


class Retrieval(Struct, frozen=True, kw_only=True):
    """How the bot retrieves memories in this turn. At the cap, a save may replace a dormant
    memory only when retrieval picks memories by relevance (all three are set) and the
    workspace has memory decay on; otherwise it is refused with memory_save_failed_limit_exceeded.

    Attributes:
        rag_available: True when the bot retrieves memories by relevance (embeddings) in this
            workspace rather than showing the model every memory.
        embedding_model: The embedding model in use; null or blank counts as none.
        embedding_credentials: True when the bot has credentials for that embedding model.
    """

    rag_available: bool = False
    embedding_model: ShortText | None = None
    embedding_credentials: bool = False


class ToolCall(Envelope, kw_only=True, frozen=True):
    """What every command carrying a model's memory tool call says: the call and where it was made.

    Attributes:
        tool_args: The model's arguments exactly as it gave them, decoded from the provider's
            argument string into a JSON object. Not validated on decoding: bad arguments are a
            normal answer naming the parameter, never a poison message.
        persona: The speaking persona: whose lineage the memory belongs to.
        bot_user_id: The bot's own Discord user id (client.user.id): a target of a create that
            resolves to it makes the memory server-wide instead of personal.
        triggerer: Who caused the turn; a create needs one with a users row (recorded as the
            teacher of a server memory) and is refused without.
        channel: Where the tool call happened: where the notice goes and whether the thought log
            gets a copy.
        participants: The conversation's user references the model may name (TomoriBot's
            participant target index), checked first when resolving target_user.
        member_matches: The guild members the bot found for the target_user text (see
            MemberMatch). Not read in a DM or without a target_user, so it may be left empty
            there.
    """

    # Deliberately loose: a model's bad arguments are a normal outcome, not a poison message.
    tool_args: Any = None
    persona: Persona
    bot_user_id: DiscordId
    triggerer: Triggerer | None = None
    channel: Channel
    participants: Annotated[list[Participant], Meta(max_length=256)] = []
    member_matches: Annotated[list[MemberMatch], Meta(max_length=256)] = []


class CreateMemory(ToolCall, kw_only=True, frozen=True):
    """`memory.create`: the model's `create_long_term_memory` tool call.

    Attributes:
        tool_args: The model's arguments exactly as it gave them, decoded from the provider's
            argument string into a JSON object: memory_content, memory_scope (server_wide or
            target_user) and, for target_user, target_user (legacy names target_user_nickname
            and target_user_discord_id are read too). Not validated on decoding: bad arguments
            are answered with memory_save_failed_invalid_args naming the parameter.
        persona: The speaking persona: whose lineage the memory joins.
        bot_user_id: The bot's own Discord user id: a target that resolves to it (or that
            resolves to anyone when target_user is the word self) makes the memory server-wide
            instead of personal.
        triggerer: Who caused the turn, with a users row (recorded as the teacher of a server
            memory); null, or a triggerer without a users row, is refused with
            memory_save_failed_internal_error.
        channel: Where the tool call happened: where the notice goes and whether the thought log
            gets a copy.
        participants: The conversation's user references the model may name (TomoriBot's
            participant target index), checked first when resolving target_user.
        member_matches: The guild members the bot found for the target_user text (see
            MemberMatch). Not read in a DM or for a server_wide save, so it may be left empty
            there.
        retrieval: How memories are retrieved in this turn: whether a save at the cap may
            replace a dormant memory.
    """

    retrieval: Retrieval = Retrieval()


class UpdateMemory(ToolCall, kw_only=True, frozen=True):
    """`memory.update`: the model's `update_long_term_memory` tool call. It replaces the text of
    the memory the model names by the id it was shown (`ID:N`), or deletes that memory when
    memory_content is blank. Answered in TomoriBot's words and statuses (docs/design.md,
    section 8.4).

    Attributes:
        tool_args: The model's arguments exactly as it gave them, decoded from the provider's
            argument string into a JSON object: memory_id (a number: the N of `ID:N`),
            memory_content (the full new text; blank deletes the memory) and, for a personal
            memory, target_user (legacy names target_user_nickname and target_user_discord_id
            are read too). Not validated on decoding: bad arguments are answered with
            memory_update_failed_invalid_args naming the parameter.
        persona: The speaking persona. A server memory is found only within its lineage, a
            personal one within its lineage or the user's global memories (lineage 0). id 0
            is refused (memory_update_failed_internal_error, "Missing server context").
        bot_user_id: The bot's own Discord user id: a target_user that resolves to it is
            refused (memory_update_failed_invalid_target).
        triggerer: Who caused the turn. In a DM the target_user must be them, or the update is
            refused (memory_update_failed_invalid_scope).
        channel: Where the tool call happened: where the notice goes, whether the thought log
            gets a copy, and (is_dm) which membership rule a target_user is held to.
        participants: The people of the conversation the model may name (what the bot listed to
            the model), checked first when resolving target_user.
        member_matches: The guild's members the target_user may be: the bot's member search
            for the target_user text, and every participant who is a member of the guild now
            (discord.js `guild.members.cache.get(id)`, else `guild.members.fetch(id)`). In a
            guild a target_user whose id is not among them (a participant who left, say) is
            refused as not in this server (memory_update_failed_invalid_scope), as TomoriBot
            refuses a target it cannot fetch from the guild; a proxy identity is exempt. Not
            read in a DM or without a target_user, so it may be left empty there.
    """


# Long enough for any panel entry; MAX_MEMORY_LENGTH is checked by the worker with its own
# refusal (content-too-long), so only absurd payloads fail decoding.
PanelText = Annotated[str, Meta(max_length=20_000, pattern=_NO_NUL)]
# A message-proxy identity's id, in TomoriBot's grammar (worker/domain/proxy.py): `pk:<uuid>`,
# `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`.
SyntheticId = Annotated[str, Meta(min_length=1, max_length=128, pattern=_NO_NUL)]
MemoryScope = Literal["server", "personal"]
# Tags as a panel takes them: raw comma-separated text or a list (worker/domain/tags.py parses both).
PanelTags = Annotated[str, Meta(max_length=2000, pattern=_NO_NUL)] | Annotated[list[ShortText], Meta(max_length=100)]
# An import holds at most this many entries (more than any cap a deployment sets in practice);
# the command as a whole must also fit the worker's MAX_COMMAND_BYTES.
MAX_IMPORT_ENTRIES = 2000


class Actor(Struct, frozen=True, kw_only=True):
    """The person using the panel.

    Attributes:
        id: Their Discord user id. Personal memories are theirs (unless identity_id is set), and
            server memories they add are recorded as taught by them.
        is_manager: True when they have Manage Server in this guild, and always in a DM.
            Managers see and change every server memory and may teach when member teaching is
            off; others see and change only the server memories they taught.
    """

    id: DiscordId
    # ManageGuild in a server; anyone in a DM.
    is_manager: bool = False


class ImportEntry(Struct, frozen=True, kw_only=True):
    """One memory of an import (TomoriBot's data import: a memory item of an export file).

    Attributes:
        content: The memory's text: trimmed, never rewritten, at most MAX_MEMORY_LENGTH UTF-16
            units (a longer or blank one refuses the whole import).
        tags: This memory's tags, parsed as the panels parse them (split on commas, trimmed,
            quotes stripped, empty and over-32-character tags dropped, duplicates removed, at most
            5 kept; `#name` is a channel); null for none.
    """

    content: PanelText
    tags: PanelTags | None = None


class ManualMemory(Envelope, kw_only=True, frozen=True):
    """`memory.manual`: the `/memories` and `/personal memories` panels.

    People write these by hand: they are only trimmed, never rewritten, never evict (at the cap
    an add is refused), and every add and edit protects the row from eviction.

    Attributes:
        actor: Who is using the panel, and whether they manage the server.
        scope: server (the /memories panel: the workspace's memories) or personal (the
            /personal memories panel: the actor's own, or identity_id's).
        action: add (content), add_batch (contents and content, all or nothing), edit
            (memory_id, with content and/or tags), remove (memory_id) or import (strategy and
            entries: TomoriBot's data import of one lineage's memories, all or nothing; server
            memories only by a manager).
        lineage_id: Which lineage's memories: for server memories the active persona's lineage;
            for personal ones a persona's lineage, or 0 for the user's global memories (shown to
            every persona). An edit or remove finds only rows of exactly this lineage.
        persona_id: The persona a server memory added here is attributed to; null for none.
            Ignored for personal memories.
        identity_id: Personal scope only: act on the memories of this message-proxy identity
            (`pk:<uuid>`, `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`),
            which the actor must host; null for the actor's own.
        memory_id: The memory to edit or remove (its server_memory_id or personal_memory_id).
        content: The text to add, or the new text of an edit (null keeps the stored text). In
            add_batch, the typed entry, added after the lines of contents.
        contents: add_batch only: the entries to add, typically the lines of an uploaded text
            file. Blank lines are dropped and lines already stored (or repeated) are skipped,
            ignoring case.
        tags: Tags as the panel took them: raw comma-separated text or a list. Split on commas,
            trimmed, quotes stripped; empty and over-32-character tags dropped; duplicates
            removed; at most 5 kept. A tag starting with `#` names a channel. On an edit, null
            keeps the stored tags. Not read by import (each entry has its own).
        strategy: import only: merge (add the entries, skipping any whose text and tags equal
            a stored memory of this owner and exact lineage, or an earlier entry; whitespace
            runs and tag order ignored) or replace (delete every memory of this owner and exact
            lineage, then add every entry). Refused with limit-reached, nothing changed, when
            the owner's memories would then exceed the cap.
        entries: import only, and required there: the memories to import, each with its own
            tags. An empty list with replace clears the lineage.
    """

    actor: Actor
    scope: MemoryScope
    action: Literal["add", "add_batch", "edit", "remove", "import"]
    lineage_id: LineageId
    persona_id: Int32 | None = None
    identity_id: SyntheticId | None = None
    memory_id: MemoryId | None = None
    content: PanelText | None = None
    contents: Annotated[list[PanelText], Meta(max_length=2000)] | None = None
    tags: PanelTags | None = None
    strategy: Literal["merge", "replace"] = "merge"
    entries: Annotated[list[ImportEntry], Meta(max_length=MAX_IMPORT_ENTRIES)] | None = None


class MemoryRef(Struct, frozen=True):
    """One memory a reply used.

    Attributes:
        scope: server or personal: which table memory_id is from.
        memory_id: Its server_memory_id or personal_memory_id.
    """

    scope: MemoryScope
    memory_id: MemoryId


class ReinforceMemories(Envelope, kw_only=True, frozen=True):
    """`memory.reinforce`: the memories a reply used.

    Reinforcing marks a memory as recently used (last_reinforced_at now, reinforcement_count
    plus one), which keeps it from being evicted as dormant. It changes nothing a bot shows.

    Attributes:
        lineage_id: The lineage of the persona that replied. Server memories count only when
            they belong to this workspace and lineage; personal ones when they are of this
            lineage or global (lineage 0).
        memories: The memories the reply used: those the model was given for it (at most 500).
            Ids that do not qualify, or no longer exist, are ignored.
    """

    lineage_id: LineageId
    memories: Annotated[list[MemoryRef], Meta(max_length=500)] = []


class SeedBio(Envelope, kw_only=True, frozen=True):
    """`memory.seed_bio`: the one-time bio snapshot of a new proxy identity.

    The bio becomes one global (lineage 0) personal memory of the identity, source bio_seed,
    at most once per identity whatever the command id; it is skipped for an identity that is
    not new, a blank bio, a host that protects the identity, or a full lineage 0.

    Attributes:
        identity_user_id: The identity's synthetic id (`pk:<uuid>` for PluralKit, `pb:<digits>`
            for PluralBuddy, `<prefix>i:<length>:<instance>:<key>` for a custom instance). The bot
            must have written its users row and its host links first: an identity with no
            resolvable host is skipped as protected.
        is_new_identity: True only when the bot has just created this identity's row; false is
            answered skipped.
        bio: The identity's profile text as the proxy reports it; whitespace is collapsed and it
            is cut to MESSAGE_PROXY_BIO_SEED_MAX_CHARS (default 1000 UTF-16 units). null or
            blank: skipped.
    """

    identity_user_id: SyntheticId
    is_new_identity: bool
    bio: PanelText | None = None


# Every command kind but memory.shadow itself: the writes a bot may shadow (contracts/registry.py
# adds "shadow" to make CommandKind).
ShadowedKind = Literal["create", "manual", "reinforce", "seed_bio", "update"]


class ShadowReport(Envelope, kw_only=True, frozen=True):
    """`memory.shadow`: what a bot that still writes itself did, after asking the worker for
    the dry run of the same command (shadow mode, docs/design.md section 3.6). The worker pairs
    it with its dry run and records whether the two agreed (`memoryctl shadow report`).

    Attributes:
        shadowed_id: The command_id of the dry run this reports on (the report's own
            command_id is a fresh one).
        kind: The kind of the shadowed command.
        timed_out: True when the dry run's answer did not come within the bot's timeout: the
            pair is counted as timed out, never compared.
        result: What the bot's own write gave, in the shadowed kind's result shape (`success`,
            `message` or `error`, `data` with its `status`, `reason`, ids and the rest, `notice`):
            every field given is compared with the dry run's; a field left out is not.
            null when the bot's own write threw (see `error`).
        error: The bot's own write threw: its message (the pair is counted as differing).
    """

    shadowed_id: CommandId
    kind: ShadowedKind
    timed_out: bool = False
    result: dict[str, Any] | None = None
    error: Annotated[str, Meta(max_length=2000, pattern=_NO_NUL)] | None = None

    def __post_init__(self) -> None:
        # `result` is stored as jsonb, which cannot hold NUL or an infinite number (a literal
        # beyond a double, read as JSON.parse reads it): refused at decoding, like every typed
        # string (msgspec reports the ValueError as the command's validation error).
        if self.result is not None:
            if _holds(self.result, lambda v: isinstance(v, str) and "\x00" in v):
                raise ValueError("`result` holds a NUL character (\\u0000), which cannot be stored")
            if _holds(self.result, lambda v: isinstance(v, float) and not math.isfinite(v)):
                raise ValueError("`result` holds a number beyond a double (such as 1e400), which cannot be stored")


def _holds(value: Any, found: Callable[[Any], bool]) -> bool:
    """Does the JSON value, or any key or value within it, satisfy `found`?"""
    if found(value):
        return True
    if isinstance(value, dict):
        return any(found(k) or _holds(v, found) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds(v, found) for v in value)
    return False


# The command kinds, their decoders and types by kind: contracts/registry.py.
# Read as the commands are (contracts/decoding.py): what a command's decoder reads, the probe reads.
PROBE_DECODER = CommandDecoder(ReplyProbe)
