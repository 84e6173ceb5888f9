// The /memories panel's vectorize (memoriesDocumentOperations.ts, vectorizeLoadedMemory) turns a
// server memory into a document and then deletes the memory. Everything up to and including
// ragRepository.insertWithChunks stays the bot's (the embedding, the document caps, the quota);
// the delete, `serverMemoryRepository.remove(target.server_memory_id)` today, becomes this
// memory.manual remove, so it runs under the workspace's lock, is checked as any panel removal is
// (a non-manager only their own rows, and only while member teaching is on), and reaches every
// process's cache. A refused or failed delete leaves both, as today: "partial-failure".
import type { ManualMemoryInput } from "@memory-worker/client";
import type { ServerMemoryRow } from "@/types/db/schema";
import type { VectorizeMemoryInput, VectorizeMemoryResult } from "@/utils/discord/interactions/memoriesDocumentOperations";
import { runPanelCommand } from "./panels.js";

export interface StoredDocument {
  documentId: number;
  documentName: string;
  chunkCount: number;
}

/** The delete as a memory.manual remove, by the person at the panel (shadow mode sends the same: shadowPanels.ts). */
export function vectorizeRemoveCommand(input: VectorizeMemoryInput, memoryId: number): ManualMemoryInput {
  return {
    workspace_id: input.workspaceId,
    actor: { id: input.userDiscId, is_manager: input.canManage },
    scope: "server",
    action: "remove",
    lineage_id: input.personaLineageId,
    memory_id: memoryId,
  };
}

/** Call once the document is stored, in place of the repository delete. */
export async function removeVectorizedMemory(input: VectorizeMemoryInput, target: ServerMemoryRow,
  stored: StoredDocument): Promise<VectorizeMemoryResult> {
  if (target.server_memory_id === undefined) return { status: "partial-failure", ...stored };
  const data = await runPanelCommand(vectorizeRemoveCommand(input, target.server_memory_id));
  return { status: data?.status === "removed" ? "success" : "partial-failure", ...stored };
}
