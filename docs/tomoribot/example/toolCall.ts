// The facts of a turn that both memory tools send (memory.create and memory.update carry the same
// tool-call fields): whose workspace, which persona, who triggered it, where, and the people the
// model may name. The worker reads everything else (settings, privacy, blacklist, naming rows,
// hosts) from the database when it processes the command.
import { ChannelType } from "discord.js";
import { CommandDeadLettered } from "@memory-worker/client";
import type { MemoryClient } from "@memory-worker/client";
import { memoryServerDiscId } from "@/tools/functionCalls/memoryNoticeContent";
import type { ToolContext, ToolResult } from "@/types/tool/interfaces";
import { resolveTriggererDiscordId } from "@/utils/discord/targetResolver";
import { canMirrorToThoughtLog } from "@/utils/discord/thoughtLogAudience";
import { log } from "@/utils/misc/logger";
import { dropInvalidated, sendTwice } from "./memory.js";
import { memberMatches, participants } from "./memberSearch.js";
import { deliverMemoryNotice } from "./notice.js";

export type CreateCommand = Parameters<MemoryClient["create"]>[0];
/** The fields every tool call carries (the update's command is these, the create's adds `retrieval`). */
export type ToolCallFacts = Omit<CreateCommand, "tool_args" | "retrieval">;
type Persona = CreateCommand["persona"];

const TARGET_PARAMETERS = ["target_user", "target_user_nickname", "target_user_discord_id"] as const;

/**
 * The target name the model gave, as the tools read it: the first non-blank of target_user and
 * its legacy names. Only the member search reads it; the worker reads the raw arguments itself
 * and answers malformed ones with the tool's own invalid_args.
 */
export function requestedTarget(args: Record<string, unknown>): string | undefined {
  for (const name of TARGET_PARAMETERS) {
    const value = args[name];
    if (typeof value === "string" && value.trim()) return value.trim();
  }
  return undefined;
}

/** The name the notice titles use for the persona, as TomoriBot picks it. */
export function personaNickname(context: ToolContext): string {
  return context.personaUsername || context.tomoriState.persona_nickname || context.client.user?.username || "TomoriBot";
}

function persona(context: ToolContext): Persona {
  const state = context.tomoriState;
  const naming = state.naming_config;
  return {
    // persona_id is optional in TomoriBot's state; 0 stands for "missing", which the worker
    // refuses as the tools did ("Internal bot error: ...").
    id: state.persona_id ?? 0,
    lineage_id: state.persona_lineage_id,
    name: personaNickname(context),
    naming: naming ? { prefixes: { ...naming.prefixes }, suffixes: { ...naming.suffixes } } : null,
  };
}

function channelFacts(context: ToolContext): CreateCommand["channel"] {
  const channel = context.channel;
  if (channel.isDMBased()) {
    return { id: channel.id, is_dm: true, is_private: false, everyone_can_view: false, url: context.message?.url ?? channel.url };
  }
  const listed = context.tomoriState.config.private_channel_ids ?? [];
  // The worker compares channel.id with the private list itself; a private thread, and a thread
  // of a listed channel, only the bot can recognise.
  const parentListed = channel.isThread() && channel.parentId !== null && listed.includes(channel.parentId);
  // canMirrorToThoughtLog takes discord.js's Channel union, which the context's base classes are
  // not part of: the client's cached instance of the same channel is.
  const cached = context.client.channels.resolve(channel.id);
  return {
    id: channel.id,
    is_dm: false,
    is_private: channel.type === ChannelType.PrivateThread || parentListed,
    // The audience rule of TomoriBot's thought-log mirror, asked of the channel alone (the
    // worker decides about the thought-log channel and the private list); false when unknown.
    everyone_can_view: cached !== null && canMirrorToThoughtLog(cached, cached, []),
    url: context.message?.url ?? channel.url,
  };
}

/** Every fact of the turn the worker needs for a tool call, in the command's fields. */
export async function toolCallFacts(context: ToolContext, target: string | undefined): Promise<ToolCallFacts> {
  const botUser = context.client.user;
  if (botUser === null) throw new Error("the Discord client is not logged in: no tool call can be answered");
  const triggererId = resolveTriggererDiscordId(context);
  return {
    command_id: crypto.randomUUID(),
    // The guild id, or the user's id in a DM; TomoriBot's own helper, which throws when neither exists.
    workspace_id: memoryServerDiscId(context, "memory tool call without a guild or a user"),
    persona: persona(context),
    bot_user_id: botUser.id,
    triggerer: triggererId
      ? { id: triggererId, name: context.message?.member?.displayName ?? context.message?.author.displayName ?? triggererId }
      : null,
    channel: channelFacts(context),
    participants: participants(context),
    member_matches: await memberMatches(context, target),
  };
}

interface ToolCallAnswer {
  success: boolean;
  message?: string | null;
  error?: string | null;
  data: { status: string };
  invalidated?: Parameters<typeof dropInvalidated>[0];
  notice?: Parameters<typeof deliverMemoryNotice>[1] | null;
}

/**
 * Send a tool call, drop what it made stale, deliver its notice, and hand the model the answer
 * exactly as the worker worded it. `failedStatus` is the tool's own internal_error status, for
 * the two cases the worker could not answer.
 */
export async function runToolCall<C extends { command_id?: string }, R extends ToolCallAnswer>(
  send: (command: C) => Promise<R>,
  command: C,
  context: ToolContext,
  failedStatus: R["data"]["status"],
): Promise<ToolResult> {
  let result: R | null;
  try {
    result = await sendTwice(send, command);
  } catch (error) {
    if (!(error instanceof CommandDeadLettered)) throw error;
    // Set aside unapplied: a bug of the bot or the deployment, not of the user. Nothing changed.
    log.error(`memory tool call ${command.command_id} dead-lettered: ${error.outcome.dead_letter?.reason}`, error);
    return unanswered(failedStatus, "The memory service refused this request because of a bot problem; nothing was changed.");
  }
  if (result === null) {
    return unanswered(failedStatus, "The memory service did not answer in time, so I can't tell whether the change "
      + "was made. Don't retry now; it may appear shortly.");
  }
  // Before the notice: the turn a notice prompts, in any process, already sees the change.
  dropInvalidated(result.invalidated);
  if (result.notice) await deliverMemoryNotice(context, result.notice);
  return {
    success: result.success,
    ...(result.message ? { message: result.message } : {}),
    ...(result.error ? { error: result.error } : {}),
    data: result.data,
  };
}

function unanswered(status: string, reason: string): ToolResult {
  return { success: false, error: reason, data: { status, reason } };
}
