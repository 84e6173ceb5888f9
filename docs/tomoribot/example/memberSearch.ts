// The people the worker's target resolution picks from, gathered the way TomoriBot's
// resolveUserTarget finds them (src/utils/discord/targetResolver.ts): the conversation's
// participant target index first, then the guild's members. The worker runs the stages and their
// order; the bot supplies what only it can reach (its context items, Discord, and the members its
// own naming lookups name, fetched by id).
import type { Guild, GuildMember } from "discord.js";
import type { MemoryClient } from "@memory-worker/client";
import { ContextItemTag } from "@/types/misc/context";
import type { ConversationUserReference } from "@/types/misc/context";
import type { ToolContext } from "@/types/tool/interfaces";
import { isBridgeUserId } from "@/utils/bridges";
import { userNamingRepository, userRepository } from "@/utils/db/repositories";
import { normalizeUserTargetInput, stripNamingAffixes } from "@/utils/discord/targetResolver";
import { isMessageProxyIdentityUserId } from "@/utils/messageProxy/identityUserId";
import { collectParticipantTargetIndex, projectConversationUserReferences } from "@/utils/text/participants/targetIndex";
import { resolveEffectiveUserNaming } from "@/utils/text/userNaming";

type CreateCommand = Parameters<MemoryClient["create"]>[0];
type Participant = NonNullable<CreateCommand["participants"]>[number];
type MemberMatch = NonNullable<CreateCommand["member_matches"]>[number];

// The contract's bounds (participants, their aliases, member matches).
const MAX_PARTICIPANTS = 256;
const MAX_ALIASES = 64;
const MAX_MEMBER_MATCHES = 256;
const MEMBER_SEARCH_LIMIT = 100;
const SNOWFLAKE = /^\d{17,20}$/;

/** Who the conversation's context lists, as the resolver's first stages see them. */
function conversationReferences(context: ToolContext): ConversationUserReference[] {
  const items = context.contextItems ?? [];
  const index = collectParticipantTargetIndex(items);
  // The target index carries only the `tool_target` aliases (the guild display name is not one).
  if (index.targets.length > 0) return projectConversationUserReferences(index);
  // Context built before the target index: the items listing the users in the conversation.
  return items
    .filter((item) => item.metadataTag === ContextItemTag.KNOWLEDGE_USERS_IN_CONVERSATION)
    .flatMap((item) => item.conversationUsers ?? []);
}

export function participants(context: ToolContext): Participant[] {
  return conversationReferences(context).slice(0, MAX_PARTICIPANTS).map((reference) => ({
    id: reference.targetId,
    kind: isBridgeUserId(reference.targetId)
      ? "matrix"
      : isMessageProxyIdentityUserId(reference.targetId) ? "proxy" : "discord",
    // The resolver prefers the one candidate whose display label the name matches.
    label: reference.displayLabel,
    primary_label: reference.displayLabel,
    aliases: reference.aliases.slice(0, MAX_ALIASES),
  }));
}

function memberMatch(member: GuildMember): MemberMatch {
  return {
    id: member.id,
    display_name: member.displayName,
    nickname: member.nickname,
    global_name: member.user.globalName,
    username: member.user.username,
    is_bot: member.user.bot,
  };
}

async function contextGuild(context: ToolContext): Promise<Guild | null> {
  if (!context.guildId) return null;
  return context.client.guilds.cache.get(context.guildId)
    ?? await context.client.guilds.fetch(context.guildId).catch(() => null);
}

/** The accounts TomoriBot's database stages name for `input`: persona nickname (this lineage) and saved nickname. */
async function namedByNamingRows(input: string, lineageId: number): Promise<string[]> {
  const normalized = normalizeUserTargetInput(input);
  const [persona, saved] = await Promise.all([
    userNamingRepository.findByPersonaNickname(normalized, lineageId),
    userRepository.findByNormalizedNickname(normalized),
  ]);
  return [...persona.map((row) => row.userDiscId), ...saved.map((row) => row.user_disc_id)];
}

/** The accounts whose composed name (nickname with their own or the persona's affixes) is `input`. */
async function namedByComposedName(context: ToolContext, input: string, lineageId: number): Promise<string[]> {
  const normalized = normalizeUserTargetInput(input);
  const candidates = await userNamingRepository.findComposedNameCandidates(normalized, lineageId);
  return candidates
    .filter((candidate) => normalizeUserTargetInput(resolveEffectiveUserNaming({
      global: {
        userNickname: candidate.globalNickname,
        prefixOverride: candidate.globalPrefixOverride,
        suffixOverride: candidate.globalSuffixOverride,
        addressingStyle: candidate.addressingStyle,
      },
      liveDisplayName: "",
      persona: context.tomoriState.naming_config,
      preference: {
        nickname_override: candidate.personaNicknameOverride,
        prefix_override: candidate.personaPrefixOverride,
        suffix_override: candidate.personaSuffixOverride,
      },
    }).formattedName) === normalized)
    .map((candidate) => candidate.userDiscId);
}

/**
 * Every guild member the resolver's guild stages may pick for `target` (none in a DM or without
 * a target): Discord's member search for the name as given and for it without the persona's
 * naming affixes, plus the members the bot's own naming lookups name (persona nickname, saved
 * nickname, composed name), which the search cannot find, fetched by id. Bots are left out, as the
 * resolver leaves them out. The worker compares exactly; this only has to include.
 */
export async function memberMatches(context: ToolContext, target: string | undefined): Promise<MemberMatch[]> {
  if (target === undefined) return [];
  const guild = await contextGuild(context);
  if (guild === null) return [];
  const found = new Map<string, GuildMember>();
  const add = (member: GuildMember | null) => {
    if (member !== null && !member.user.bot) found.set(member.id, member);
  };
  const fetchById = (ids: string[]) => Promise.all([...new Set(ids)].filter((id) => !found.has(id))
    .map(async (id) => add(await guild.members.fetch(id).catch(() => null))));

  const raw = target.trim();
  if (SNOWFLAKE.test(raw)) {
    // An id names one member and stops the resolver there.
    await fetchById([raw]);
  } else {
    const lineageId = context.tomoriState.persona_lineage_id;
    const stripped = stripNamingAffixes(raw, context.tomoriState.naming_config);
    for (const name of stripped === null ? [raw] : [raw, stripped]) {
      const searched = await guild.members.search({ query: name, limit: MEMBER_SEARCH_LIMIT }).catch(() => null);
      for (const member of searched?.values() ?? []) add(member);
      await fetchById(await namedByNamingRows(name, lineageId));
    }
    await fetchById(await namedByComposedName(context, raw, lineageId));
  }
  return [...found.values()].slice(0, MAX_MEMBER_MATCHES).map(memberMatch);
}
