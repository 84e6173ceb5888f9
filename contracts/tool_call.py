"""What the commands carrying a model's memory tool call (memory.create, memory.update) share:
the call, the persona, who triggered the turn, the channel, and the people it may name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from .envelope import Envelope
from .fields import NO_NUL, DiscordId, Int32, LineageId, ShortText


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

    id: Annotated[str, Meta(min_length=1, max_length=256, pattern=NO_NUL)]
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
