// Shadow mode (docs/tomoribot.md, section 12): a trial of the worker beside TomoriBot's own memory
// writes, before the cut-over. At each site the bot keeps its own write, wrapped in
// `client.shadowed(kind, command, () => ownWrite(), { report })`: the worker decides the same
// command as a dry run (nothing of it is written), the bot's own write runs as before, and what it
// gave is reported for the worker to compare. This module holds the step every site shares, the
// model's two tools and the bio seed; shadowPanels.ts the panels, vectorize and the data import.
import type { ShadowedCommands, ShadowedKind } from "@memory-worker/client";
import type { PersonalMemoryRow } from "@/types/db/schema";
import type { ToolContext, ToolResult } from "@/types/tool/interfaces";
import { invalidateUserCache } from "@/utils/cache/userCache";
import { personalMemoryRepository } from "@/utils/db/repositories";
import { seedMessageProxyIdentityBio as seedOwnBio } from "@/utils/messageProxy/bioSeeding";
import type { MessageProxyBioSeedDeps } from "@/utils/messageProxy/bioSeeding";
import { getMessageProxyHostProtection } from "@/utils/messageProxy/hostProtection";
import { log } from "@/utils/misc/logger";
import { seedBioCommand } from "./bioSeed.js";
import type { WorkerBioSeedArgs } from "./bioSeed.js";
import { memory } from "./memory.js";
import { createCommand } from "./memoryTool.js";
import { updateCommand } from "./updateMemoryTool.js";

/** The most a site waits for the worker's dry run before its own write goes on without it (the client's default). */
const SHADOW_WAIT_MS = 500;

/**
 * One site's shadow step. The command is built as the worker's site builds it; one that cannot be
 * built (a Discord fetch failed, startMemory has not run) leaves the own write to run alone: shadow
 * mode never fails the bot, and never changes what its own write returns or throws.
 */
export async function shadowSite<K extends ShadowedKind, T>(kind: K,
  build: () => ShadowedCommands[K] | null | Promise<ShadowedCommands[K] | null>,
  ownWrite: () => Promise<T>, report: (value: T) => Record<string, unknown>): Promise<T> {
  let command: ShadowedCommands[K] | null;
  let client: ReturnType<typeof memory>;
  try {
    command = await build();
    client = memory();
  } catch (error) {
    log.warn(`shadow mode: no ${kind} command for the worker; the bot's own write runs alone`, error);
    return ownWrite();
  }
  if (command === null) return ownWrite();
  return client.shadowed(kind, command, ownWrite, { report, timeoutMs: SHADOW_WAIT_MS });
}

/**
 * TomoriBot's ToolResult in the tools' result shape: as it is, but `endTurn`, which no result has.
 * `notice` and `invalidated` are the worker's and are not reported, so not compared.
 */
export function toolReport(result: ToolResult): Record<string, unknown> {
  return { success: result.success, message: result.message, error: result.error, data: result.data };
}

/**
 * `create_long_term_memory`: MemoryTool's execute body moves, unchanged, into a method of its own
 * (`executeOwn`), and execute becomes
 * `return shadowCreateLongTermMemory(args, context, () => this.executeOwn(args, context))`.
 */
export function shadowCreateLongTermMemory(args: Record<string, unknown>, context: ToolContext,
  ownExecute: () => Promise<ToolResult>): Promise<ToolResult> {
  return shadowSite("create", () => createCommand(args, context), ownExecute, toolReport);
}

/** `update_long_term_memory`: the same in UpdateLongTermMemoryTool. */
export function shadowUpdateLongTermMemory(args: Record<string, unknown>, context: ToolContext,
  ownExecute: () => Promise<ToolResult>): Promise<ToolResult> {
  return shadowSite("update", () => updateCommand(args, context), ownExecute, toolReport);
}

/**
 * The bio seed, fired without awaiting as before, in place of TomoriBot's seedMessageProxyIdentityBio.
 * Its own seed runs with its own three seams, the insert watched: TomoriBot's function returns
 * nothing, and the row its insert gave (or none) is what it did.
 */
export function shadowSeedMessageProxyIdentityBio(args: WorkerBioSeedArgs): Promise<void> {
  let inserted: PersonalMemoryRow | null = null;
  const deps: MessageProxyBioSeedDeps = {
    getHostProtection: getMessageProxyHostProtection,
    invalidateCache: invalidateUserCache,
    addPersonalMemory: async (userId, personaLineageId, content) => {
      inserted = await personalMemoryRepository.add(userId, personaLineageId, content);
      return inserted;
    },
  };
  return shadowSite("seed_bio", () => seedBioCommand(args), () => seedOwnBio(args, deps), () => {
    const memoryId = inserted?.personal_memory_id;
    // A seed TomoriBot did not write (not new, blank, protected, the limit) is the worker's skip; its
    // reasons are the worker's words, so only the status is compared.
    return memoryId === undefined ? { data: { status: "skipped" } } : { data: { status: "seeded", memory_id: memoryId } };
  });
}
