// The /memories panel's operations (src/utils/discord/interactions/memoriesRoutes.ts) on the worker.
// createMemoriesInteractionRoute is given these as its `operations`; the route passes each call the
// actor's Discord id (`actorDiscId: scope.userDiscId`, which is `interaction.user.id`), which the
// worker needs and TomoriBot's operations never got. The worker makes the checks the operations
// made (blacklist and teaching for non-managers, a non-manager's own rows, content, duplicates,
// limit) under the workspace's lock, and marks what the panel writes as written by a person.
import type { ManualMemoryInput } from "@memory-worker/client";
import type { ServerMemoryRow } from "@/types/db/schema";
import { serverMemoryRepository } from "@/utils/db/repositories";
import type { ServerMemoriesOperations } from "@/utils/discord/interactions/memoriesRoutes";
import { panelStatus, rowById, runPanelCommand } from "./panels.js";

/** What every operation is given: who, where, which lineage (the remove input without its memory). */
type PanelInput = Omit<Parameters<ServerMemoriesOperations["remove"]>[0], "memoryId">;
type Input<Operation extends keyof ServerMemoriesOperations> = Parameters<ServerMemoriesOperations[Operation]>[0];

function command(input: PanelInput, action: ManualMemoryInput["action"]): ManualMemoryInput {
  return {
    workspace_id: input.workspaceId,
    actor: { id: input.actorDiscId, is_manager: input.canManage },
    scope: "server",
    action,
    lineage_id: input.personaLineageId,
  };
}

/** Each operation's memory.manual command (shadow mode sends the same: shadowPanels.ts). */
export const serverPanelCommands = {
  add: (input: Input<"add">): ManualMemoryInput => ({
    ...command(input, "add"), persona_id: input.personaId, content: input.content, tags: input.tags,
  }),
  // The route already put the typed entry before the file's lines; the worker keeps that order.
  addBatch: (input: Input<"addBatch">): ManualMemoryInput => ({
    ...command(input, "add_batch"), persona_id: input.personaId, contents: input.contents, content: null, tags: input.tags,
  }),
  edit: (input: Input<"edit">): ManualMemoryInput => ({
    ...command(input, "edit"), memory_id: input.memoryId, content: input.content, tags: input.tags,
  }),
  remove: (input: Input<"remove">): ManualMemoryInput => ({ ...command(input, "remove"), memory_id: input.memoryId }),
};

/** The rows this person sees in the panel (a non-manager: the ones they taught). */
function visibleRows(input: PanelInput): Promise<ServerMemoryRow[]> {
  return serverMemoryRepository.loadServerMemoriesScoped(input.serverId, input.personaLineageId,
    input.canManage ? undefined : input.taughtByUserId);
}

type Sent = Omit<ServerMemoryRow, "server_id" | "persona_lineage_id" | "user_id">;

function shown(input: PanelInput, id: number | undefined, sent: Sent): Promise<ServerMemoryRow> {
  return rowById(visibleRows(input), (row) => row.server_memory_id, id, {
    ...sent,
    server_memory_id: id,
    server_id: input.serverId,
    persona_lineage_id: input.personaLineageId,
    user_id: input.taughtByUserId,
  });
}

export const workerServerMemoriesOperations: ServerMemoriesOperations = {
  async add(input) {
    const data = await runPanelCommand(serverPanelCommands.add(input));
    if (data?.status === "added") {
      const sent = { persona_id: input.personaId, content: input.content.trim(), tags: input.tags };
      const row = await shown(input, data.memory_id ?? data.memory_ids?.[0], sent);
      return { status: "success", row };
    }
    return panelStatus(data, ["blacklisted", "teaching-disabled", "empty-content", "content-too-long", "limit-reached"] as const);
  },

  async addBatch(input) {
    const data = await runPanelCommand(serverPanelCommands.addBatch(input));
    if (data?.status === "added") {
      return { status: "success", added: data.memory_ids?.length ?? 0, skipped: data.skipped_duplicates ?? 0 };
    }
    if (data?.status === "batch-limit-reached") {
      return { status: "batch-limit-reached", available: data.available ?? 0, requested: data.requested ?? 0 };
    }
    return panelStatus(data,
      ["blacklisted", "teaching-disabled", "empty-content", "content-too-long", "all-duplicates"] as const);
  },

  async edit(input) {
    const data = await runPanelCommand(serverPanelCommands.edit(input));
    if (data?.status === "updated" || data?.status === "unchanged") {
      const row = await shown(input, input.memoryId, { persona_id: null, content: input.content.trim(), tags: input.tags });
      return { status: data.status === "updated" ? "success" : "unchanged", row };
    }
    return panelStatus(data, ["blacklisted", "teaching-disabled", "empty-content", "content-too-long", "not-found"] as const);
  },

  async remove(input) {
    // Read first: the panel shows what it removed, and afterwards the row is gone.
    const before = await shown(input, input.memoryId, { persona_id: null, content: "", tags: [] });
    const data = await runPanelCommand(serverPanelCommands.remove(input));
    if (data?.status === "removed") return { status: "success", row: before };
    return panelStatus(data, ["teaching-disabled", "not-found"] as const);
  },
};
