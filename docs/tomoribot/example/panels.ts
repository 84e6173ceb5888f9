// The /memories (server) and /personal memories panels on the worker: the panel still collects
// the input (persona select, typed entry, uploaded .txt file, tags, the memory picked for edit or
// removal); the worker decides and writes, with the same checks the panel made itself before
// (blacklist, teaching switch, privacy, host protection, duplicates, limits).
import { ResultTimeout, isInvalidCommand, lookupOutcome } from "@memory-worker/client";
import type { InvalidCommandResult, ManualResult, MemoryClient } from "@memory-worker/client";
import { log, replyEphemeral } from "./bot-context.js";
import type { BotNatsConnection, TomoriState } from "./bot-context.js";
import { dropInvalidated, memory } from "./memory.js";

export type PanelCommand = Parameters<MemoryClient["manual"]>[0];

/** Who is using the panel, and where. */
export interface PanelUser {
  /** The guild id, or the user's id in a DM. */
  workspaceId: string;
  userId: string;
  /** interaction.memberPermissions.has("ManageGuild"); anyone in a DM. */
  isManager: boolean;
}

/** What the add modal collected: the typed entry, the uploaded file's lines, the raw tag text. */
export interface AddInput {
  typed: string;
  fileLines: string[];
  tags: string;
}

/** /memories add: one entry, or a batch when a file came with it (all or nothing). */
export function serverAdd(user: PanelUser, persona: TomoriState, input: AddInput): PanelCommand {
  const batch = input.fileLines.length > 0;
  return {
    workspace_id: user.workspaceId,
    actor: { id: user.userId, is_manager: user.isManager },
    scope: "server",
    action: batch ? "add_batch" : "add",
    lineage_id: persona.persona_lineage_id,
    persona_id: persona.persona_id,
    content: input.typed,
    contents: batch ? input.fileLines : null,
    tags: input.tags,
  };
}

/** /personal memories edit: new text and/or tags for one memory (null keeps what is stored). */
export function personalEdit(user: PanelUser, lineageId: number, memoryId: number, text: string | null,
  tags: string | null, identityId: string | null = null): PanelCommand {
  return {
    workspace_id: user.workspaceId,
    actor: { id: user.userId, is_manager: user.isManager },
    scope: "personal",
    action: "edit",
    lineage_id: lineageId, // 0: the user's global memories, shown to every persona
    identity_id: identityId, // a proxy identity the user hosts, or their own memories
    memory_id: memoryId,
    content: text,
    tags,
  };
}

/** What the panel says: the bot's own wording for the outcomes it words itself, else the reason. */
function panelText(result: ManualResult): string {
  const data = result.data;
  switch (data.status) {
    case "added":
      return data.skipped_duplicates
        ? `Added ${data.memory_ids?.length ?? 1} memories (${data.skipped_duplicates} already saved).`
        : `Added ${data.memory_ids?.length ?? 1} memories.`;
    case "updated":
      return "Memory updated.";
    case "unchanged":
      return "Nothing to change: the memory already says that.";
    case "removed":
      return "Memory removed.";
    default:
      // Refusals and failures carry a reason written for the person using the panel.
      return data.reason ?? "The memories could not be changed.";
  }
}

export async function runPanel(nc: BotNatsConnection, command: PanelCommand): Promise<void> {
  const commandId = crypto.randomUUID();
  let result: ManualResult | InvalidCommandResult;
  try {
    result = await memory().manual({ ...command, command_id: commandId });
  } catch (error) {
    if (!(error instanceof ResultTimeout)) throw error;
    // A slow worker: say whether the change is on its way rather than that it failed.
    const outcome = await lookupOutcome(nc, command.workspace_id, commandId, { timeoutMs: 2_000 });
    await replyEphemeral(outcome?.outcome === "queued"
      ? "Your change is queued and will be applied shortly."
      : "The memory service is not answering; try again in a moment.");
    return;
  }
  if (isInvalidCommand(result)) {
    // Refused unapplied (over the worker's size limit, a lineage not this bot's): the bot's
    // doing, not the user's. Nothing changed, so there is nothing to drop.
    log.warn(`memory panel command refused: ${result.data.reason}`);
    await replyEphemeral("The memories could not be changed.");
    return;
  }
  // Before showing the panel again, so it lists what is stored now.
  dropInvalidated(result.invalidated);
  await replyEphemeral(panelText(result));
}
