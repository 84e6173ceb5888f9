// After a reply: tell the worker which memories the reply was given, so they count as used and
// are not forgotten as dormant. Fire and forget: it never delays or fails the reply.
import type { MemoryClient } from "@memory-worker/client";
import { log } from "./bot-context.js";
import { memory } from "./memory.js";

type ReinforceCommand = Parameters<MemoryClient["reinforce"]>[0];
export type UsedMemory = NonNullable<ReinforceCommand["memories"]>[number];

/**
 * `used` are the memories that went into the model's context for this reply, with their ids
 * (server_memory_id or personal_memory_id): keep the ids where the context is built, since the
 * state cache's memory texts alone cannot say which rows they came from.
 */
export function reinforceAfterReply(workspaceId: string, lineageId: number, used: UsedMemory[]): void {
  if (used.length === 0) return;
  memory()
    .reinforce({ workspace_id: workspaceId, lineage_id: lineageId, memories: used.slice(0, 500) })
    .then((result) => {
      if (!result.success) log.warn(`memory reinforcement failed: ${result.data.reason ?? result.data.status}`);
    })
    .catch((error: unknown) => log.warn("memory reinforcement not sent", error));
}
