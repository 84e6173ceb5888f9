// The /personal memories panel's operations (src/utils/discord/interactions/personalMemoriesRoutes.ts)
// on the worker. createPersonalMemoriesInteractionRoute is given these as its `operations`; the route
// passes each call `actorDiscId: interaction.user.id` and `workspaceId: scope.workspaceId`. When the
// user manages one of their proxy identities, the scope's userId/userDiscId are the identity's
// (messageProxyRepository.getManagedIdentity): the command then names the identity, and the worker
// checks that the actor hosts it and that no host's privacy or blacklist protects it.
import type { ManualMemoryInput } from "@memory-worker/client";
import type { PersonalMemoryRow } from "@/types/db/schema";
import { personalMemoryRepository } from "@/utils/db/repositories";
import { personalMemoriesOperations } from "@/utils/discord/interactions/personalMemoriesRoutes";
import type { PersonalMemoriesOperations } from "@/utils/discord/interactions/personalMemoriesRoutes";
import { panelStatus, rowById, runPanelCommand } from "./panels.js";

/** What every operation is given: whose memories, which lineage, who acts (the remove input without its memory). */
type PanelInput = Omit<Parameters<PersonalMemoriesOperations["remove"]>[0], "memoryId">;
type Input<Operation extends "add" | "addBatch" | "edit" | "remove"> = Parameters<PersonalMemoriesOperations[Operation]>[0];

function command(input: PanelInput, action: ManualMemoryInput["action"]): ManualMemoryInput {
  return {
    workspace_id: input.workspaceId,
    actor: { id: input.actorDiscId },
    scope: "personal",
    action,
    // 0: the user's global memories, shown to every persona.
    lineage_id: input.personaLineageId,
    identity_id: input.userDiscId === input.actorDiscId ? null : input.userDiscId,
  };
}

/** Each operation's memory.manual command (shadow mode sends the same: shadowPanels.ts). */
export const personalPanelCommands = {
  add: (input: Input<"add">): ManualMemoryInput => ({ ...command(input, "add"), content: input.content, tags: input.tags }),
  addBatch: (input: Input<"addBatch">): ManualMemoryInput => ({
    ...command(input, "add_batch"), contents: input.contents, content: null, tags: input.tags,
  }),
  edit: (input: Input<"edit">): ManualMemoryInput => ({
    ...command(input, "edit"), memory_id: input.memoryId, content: input.content, tags: input.tags,
  }),
  remove: (input: Input<"remove">): ManualMemoryInput => ({ ...command(input, "remove"), memory_id: input.memoryId }),
};

function shown(input: PanelInput, id: number | undefined, sent: Pick<PersonalMemoryRow, "content" | "tags">):
  Promise<PersonalMemoryRow> {
  return rowById(personalMemoryRepository.loadForUserLineage(input.userId, input.personaLineageId, false),
    (row) => row.personal_memory_id, id,
    { ...sent, personal_memory_id: id, user_id: input.userId, persona_lineage_id: input.personaLineageId });
}

export const workerPersonalMemoriesOperations: PersonalMemoriesOperations = {
  async add(input) {
    const data = await runPanelCommand(personalPanelCommands.add(input));
    if (data?.status === "added") {
      const row = await shown(input, data.memory_id ?? data.memory_ids?.[0], { content: input.content.trim(), tags: input.tags });
      return { status: "success", row };
    }
    // A proxy identity its hosts' settings protect has no receipt of its own: the panel says privacy.
    if (data?.status === "host-protected") return { status: "privacy-blocked" };
    return panelStatus(data, ["privacy-blocked", "empty-content", "content-too-long", "limit-reached"] as const);
  },

  async addBatch(input) {
    const data = await runPanelCommand(personalPanelCommands.addBatch(input));
    if (data?.status === "added") {
      return { status: "success", added: data.memory_ids?.length ?? 0, skipped: data.skipped_duplicates ?? 0 };
    }
    if (data?.status === "batch-limit-reached") {
      return { status: "batch-limit-reached", available: data.available ?? 0, requested: data.requested ?? 0 };
    }
    if (data?.status === "all-duplicates") return { status: "all-duplicates" };
    if (data?.status === "host-protected") return { status: "privacy-blocked" };
    return panelStatus(data, ["privacy-blocked", "empty-content", "content-too-long"] as const);
  },

  async edit(input) {
    const data = await runPanelCommand(personalPanelCommands.edit(input));
    if (data?.status === "updated") {
      return { status: "success", row: await shown(input, input.memoryId, { content: input.content.trim(), tags: input.tags }) };
    }
    if (data?.status === "host-protected") return { status: "privacy-blocked" };
    return panelStatus(data, ["unchanged", "not-found", "privacy-blocked", "empty-content", "content-too-long"] as const);
  },

  async remove(input) {
    const before = await shown(input, input.memoryId, { content: "", tags: [] });
    const data = await runPanelCommand(personalPanelCommands.remove(input));
    if (data?.status === "removed") return { status: "success", row: before };
    return panelStatus(data, ["not-found"] as const);
  },

  // Short-term memory is not a memory the worker keeps: the panel's own clearing stays.
  clearStm: (userDiscId) => personalMemoriesOperations.clearStm(userDiscId),
};
