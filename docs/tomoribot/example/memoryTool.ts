// The `create_long_term_memory` tool's execute, on the worker: the bot gathers the facts of the
// turn into one memory.create command and hands the worker's answer to the model unchanged. The
// worker validates the arguments, resolves the target, checks privacy and capacity, saves and
// plans the notice; the bot then drops the stale cache entries and delivers the notice.
import { CommandDeadLettered, ResultTimeout } from "@memory-worker/client";
import type { CommandResult, MemoryClient } from "@memory-worker/client";
import {
  everyoneCanView,
  findUserIdsByStoredNickname,
  isBridgeUserId,
  isMessageProxyIdentityUserId,
  log,
  resolveTriggererDiscordId,
} from "./bot-context.js";
import type { GuildMember, ToolContext, ToolResult } from "./bot-context.js";
import { dropInvalidated, memory } from "./memory.js";
import { deliverNotice } from "./notice.js";

export type CreateCommand = Parameters<MemoryClient["create"]>[0];
type Participant = NonNullable<CreateCommand["participants"]>[number];
type MemberMatch = NonNullable<CreateCommand["member_matches"]>[number];
type ResultData = CommandResult["data"];

const SNOWFLAKE = /^<@!?(\d{17,20})>$|^(\d{17,20})$/;
const TARGET_PARAMETERS = ["target_user", "target_user_nickname", "target_user_discord_id"] as const;
const MEMBER_SEARCH_LIMIT = 100;

/** The guild id, or the user's id in a DM: whose memories and settings the command uses. */
export function workspaceIdOf(context: ToolContext): string {
  const guildId = context.channel.guild?.id;
  const id = guildId ?? context.message?.author.id ?? context.userId;
  if (!id) throw new Error("no guild and no user: cannot tell whose memory this is");
  return id;
}

/** The name the model used for the target, as the worker will read it (first non-blank). */
function targetText(args: Record<string, unknown>): string | undefined {
  if (args.memory_scope !== "target_user") return undefined;
  for (const name of TARGET_PARAMETERS) {
    const value = args[name];
    const text = typeof value === "number" ? String(value) : typeof value === "string" ? value.trim() : "";
    if (text) return text;
  }
  return undefined;
}

function participants(context: ToolContext): Participant[] {
  return context.conversationUsers.map((user) => ({
    id: user.targetId,
    kind: isBridgeUserId(user.targetId) ? "matrix" : isMessageProxyIdentityUserId(user.targetId) ? "proxy" : "discord",
    label: user.displayLabel,
    primary_label: user.displayLabel,
    aliases: user.aliases,
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

/**
 * Everyone the worker's member stages may pick from: Discord's search for the name, the member
 * an id or mention names, and the members whose saved or persona nickname is that name (the
 * search cannot find those). The worker compares exactly; the search only has to include.
 */
async function memberMatches(context: ToolContext, target: string | undefined): Promise<MemberMatch[]> {
  const guild = context.channel.guild;
  if (guild === null || target === undefined) return [];
  const found = new Map<string, GuildMember>();
  const fetchMember = async (id: string) => {
    const member = await guild.members.fetch(id).catch(() => null);
    if (member !== null) found.set(member.id, member);
  };
  const id = SNOWFLAKE.exec(target);
  if (id !== null) {
    await fetchMember(id[1] ?? id[2] ?? "");
  } else {
    const query = target.replace(/^@/, "").trim();
    const results = await guild.members.search({ query, limit: MEMBER_SEARCH_LIMIT }).catch(() => null);
    for (const member of results?.values() ?? []) found.set(member.id, member);
    const lineage = context.tomoriState.persona_lineage_id;
    for (const userId of await findUserIdsByStoredNickname(query, lineage)) {
      if (!found.has(userId)) await fetchMember(userId);
    }
  }
  return [...found.values()].map(memberMatch);
}

function channelFacts(context: ToolContext): CreateCommand["channel"] {
  const channel = context.channel;
  const listed = context.tomoriState.config.private_channel_ids;
  // The worker checks channel.id against the private list itself; a thread of a listed
  // channel, and a private thread, only the bot can recognise.
  const inListedParent = channel.isThread() && channel.parentId !== null && listed.includes(channel.parentId);
  return {
    id: channel.id,
    is_dm: channel.isDMBased(),
    is_private: channel.isPrivateThread() || inListedParent,
    everyone_can_view: !channel.isDMBased() && everyoneCanView(channel),
    url: context.message?.url ?? channel.url,
  };
}

/** Every fact of the turn the worker needs, in the command's fields. */
export async function createCommand(args: Record<string, unknown>, context: ToolContext): Promise<CreateCommand> {
  const state = context.tomoriState;
  const botUser = context.client.user;
  if (botUser === null) throw new Error("the bot is not logged in");
  const triggererId = resolveTriggererDiscordId(context);
  return {
    command_id: crypto.randomUUID(),
    workspace_id: workspaceIdOf(context),
    tool_args: args,
    persona: {
      id: state.persona_id,
      lineage_id: state.persona_lineage_id,
      name: context.personaUsername || state.persona_nickname,
    },
    bot_user_id: botUser.id,
    triggerer: triggererId
      ? { id: triggererId, name: context.message?.author.displayName ?? triggererId }
      : null,
    channel: channelFacts(context),
    participants: participants(context),
    member_matches: await memberMatches(context, targetText(args)),
    retrieval: {
      rag_available: context.retrieval.ragEnabled,
      embedding_model: context.retrieval.embeddingModel,
      embedding_credentials: context.retrieval.hasEmbeddingCredentials,
    },
  };
}

/** What the model is told when the worker could not answer: one of the tool's own statuses. */
function unanswered(reason: string): ToolResult {
  const data: ResultData = { status: "memory_save_failed_internal_error", reason };
  return { success: false, error: reason, data };
}

export async function executeCreateLongTermMemory(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult> {
  const command = await createCommand(args, context);
  let result: CommandResult;
  try {
    result = await memory().create(command);
  } catch (error) {
    if (error instanceof ResultTimeout) {
      // The save may still happen: the worker applies a command_id once, so asking again with
      // the same command is safe, and this answer would then be the real one.
      try {
        result = await memory().create(command);
      } catch (again) {
        log.error("memory worker did not answer a create twice", again);
        return unanswered("The memory service did not answer in time, so I can't tell whether the memory "
          + "was saved. Don't retry now; it may appear shortly.");
      }
    } else if (error instanceof CommandDeadLettered) {
      log.error(`memory create ${command.command_id} was dead-lettered: ${error.outcome.dead_letter?.reason}`, error);
      return unanswered("The memory service refused this request because of a bot problem; nothing was saved.");
    } else {
      throw error;
    }
  }
  // Before the notice: the next turn (in any process) must already see the new memory.
  dropInvalidated(result.invalidated);
  if (result.notice) await deliverNotice(result.notice, context.personaUsername);
  return {
    success: result.success,
    message: result.message ?? undefined,
    error: result.error ?? undefined,
    data: result.data,
  };
}
