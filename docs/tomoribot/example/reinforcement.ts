// Reinforcement: after a reply, tell the worker which memories the model was shown for it, so they
// count as used and are never forgotten as dormant. The ids are known exactly where the context
// builder formats them as `ID:N` (formatMemoryWithId): the server-memory block
// (src/utils/text/context/memories.ts), each participant's personal-memory line
// (src/utils/text/participants/profileEnrichers.ts), and a Minimal notice's restored body
// (minimalNoticeBodies.ts). Those call sites note each id as they format it; the turn sends them
// once its reply is delivered. Fire and forget: it changes nothing the bot shows.
import type { MemoryClient } from "@memory-worker/client";
import { formatMemoryWithId } from "@/utils/memory/memoryId";
import { log } from "@/utils/misc/logger";
import { memory } from "./memory.js";

type MemoryRef = NonNullable<Parameters<MemoryClient["reinforce"]>[0]["memories"]>[number];

// The contract's bound on one command; a context never shows more.
const MAX_REFS = 500;

/** The memories one turn's context showed the model, created with the turn's context build. */
export class MemoriesShown {
  private readonly refs = new Map<string, MemoryRef>();

  /**
   * formatMemoryWithId, noting the row's id: the call sites above use it instead. `shownId` is the
   * id the line shows (the personal lines fall back to a position when a row has no id, and such a
   * line names no memory).
   */
  format(scope: MemoryRef["scope"], memoryId: number | undefined, shownId: number, content: string, tags?: string[]): string {
    if (memoryId !== undefined) this.refs.set(`${scope}:${memoryId}`, { scope, memory_id: memoryId });
    return formatMemoryWithId(shownId, content, tags);
  }

  list(): MemoryRef[] {
    return [...this.refs.values()].slice(0, MAX_REFS);
  }
}

/**
 * After the reply is delivered. `lineageId` is the replying persona's; ids that no longer exist,
 * or belong to another lineage or workspace, are ignored by the worker.
 */
export function reinforceAfterReply(workspaceId: string, lineageId: number, shown: MemoriesShown): void {
  const memories = shown.list();
  if (memories.length === 0) return;
  memory()
    .reinforce({ workspace_id: workspaceId, lineage_id: lineageId, memories })
    .then((result) => {
      if (!result.success) log.warn(`memory reinforcement not applied: ${result.data.reason ?? result.data.status}`);
    })
    .catch((error: unknown) => log.warn("memory reinforcement not sent", error));
}
