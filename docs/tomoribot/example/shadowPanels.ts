// Shadow mode (docs/tomoribot.md, section 12) for the /memories and /personal memories panels,
// vectorize's delete and the data import: TomoriBot's own operations keep writing, each wrapped in the
// worker's dry run of the memory.manual command the worker's operation sends (shadow.ts's shadowSite).
// The routes are given these operations as their `operations` for the trial.
import type { ManualResult } from "@memory-worker/client";
import { importRepository, serverMemoryRepository } from "@/utils/db/repositories";
import type { ImportResult } from "@/utils/db/repositories/ImportRepository";
import { serverMemoriesOperations } from "@/utils/discord/interactions/memoriesRoutes";
import type { ServerMemoriesOperations } from "@/utils/discord/interactions/memoriesRoutes";
import type { VectorizeMemoryInput } from "@/utils/discord/interactions/memoriesDocumentOperations";
import { personalMemoriesOperations } from "@/utils/discord/interactions/personalMemoriesRoutes";
import type { PersonalMemoriesOperations } from "@/utils/discord/interactions/personalMemoriesRoutes";
import {
  importCommand, personalDestinations, workspaceDestinations,
  type Destination, type PersonalMappings, type Strategy, type WorkspaceMappings,
} from "./dataImport.js";
import { personalPanelCommands } from "./personalMemoriesPanel.js";
import { serverPanelCommands } from "./serverMemoriesPanel.js";
import { shadowSite } from "./shadow.js";
import { vectorizeRemoveCommand } from "./vectorize.js";

type ManualStatus = ManualResult["data"]["status"];
/** What every panel operation answers: a receipt status, and with some of them a row or counts. */
type Receipt = { status: string; available?: number; requested?: number; skipped?: number };

/**
 * A panel operation's receipt in memory.manual's result shape. `success` is the worker's `done`
 * status (with the row's id, or a batch's skipped count); `unchanged` and the refusals keep their
 * names, with a batch's available and requested; `write-failed` (TomoriBot's write failed) is the
 * worker's `failed`. A batch's added ids are not in the receipt, so they are not compared.
 */
function panelReport<R extends Receipt>(done: ManualStatus, memoryId?: (receipt: R) => number | undefined) {
  return (receipt: R): Record<string, unknown> => {
    switch (receipt.status) {
      case "success":
        return { success: true, data: { status: done, memory_id: memoryId?.(receipt), skipped_duplicates: receipt.skipped } };
      case "unchanged":
        return { success: true, data: { status: "unchanged", memory_id: memoryId?.(receipt) } };
      case "write-failed":
        return { success: false, data: { status: "failed" } };
      default:
        return { success: false, data: { status: receipt.status, available: receipt.available, requested: receipt.requested } };
    }
  };
}

export const shadowedServerMemoriesOperations: ServerMemoriesOperations = {
  add: (input) => shadowSite("manual", () => serverPanelCommands.add(input), () => serverMemoriesOperations.add(input),
    panelReport("added", (receipt) => ("row" in receipt ? receipt.row.server_memory_id : undefined))),
  addBatch: (input) => shadowSite("manual", () => serverPanelCommands.addBatch(input),
    () => serverMemoriesOperations.addBatch(input), panelReport("added")),
  edit: (input) => shadowSite("manual", () => serverPanelCommands.edit(input), () => serverMemoriesOperations.edit(input),
    panelReport("updated", () => input.memoryId)),
  remove: (input) => shadowSite("manual", () => serverPanelCommands.remove(input),
    () => serverMemoriesOperations.remove(input), panelReport("removed", () => input.memoryId)),
};

export const shadowedPersonalMemoriesOperations: PersonalMemoriesOperations = {
  add: (input) => shadowSite("manual", () => personalPanelCommands.add(input), () => personalMemoriesOperations.add(input),
    panelReport("added", (receipt) => ("row" in receipt ? receipt.row.personal_memory_id : undefined))),
  addBatch: (input) => shadowSite("manual", () => personalPanelCommands.addBatch(input),
    () => personalMemoriesOperations.addBatch(input), panelReport("added")),
  edit: (input) => shadowSite("manual", () => personalPanelCommands.edit(input),
    () => personalMemoriesOperations.edit(input), panelReport("updated", () => input.memoryId)),
  remove: (input) => shadowSite("manual", () => personalPanelCommands.remove(input),
    () => personalMemoriesOperations.remove(input), panelReport("removed", () => input.memoryId)),
  // Short-term memory is not a memory the worker keeps: nothing to shadow.
  clearStm: (userDiscId) => personalMemoriesOperations.clearStm(userDiscId),
};

/** Vectorize's last step, `serverMemoryRepository.remove(target.server_memory_id)` today: the same call, shadowed. */
export function shadowRemoveVectorizedMemory(input: VectorizeMemoryInput, memoryId: number): Promise<boolean> {
  return shadowSite("manual", () => vectorizeRemoveCommand(input, memoryId), () => serverMemoryRepository.remove(memoryId),
    (removed) => (removed ? { success: true, data: { status: "removed", memory_id: memoryId } } : { success: false }));
}

/**
 * A bundle import: TomoriBot's one call writes every destination, the worker takes one command per
 * destination. Each destination's dry run runs first, in turn (each waits up to the timeout), then
 * TomoriBot's import once. Its result is the bundle's: every destination is reported as succeeded or
 * not, and a bundle of one destination with its counts too.
 */
function shadowImport(destinations: Destination[], strategy: Strategy, ownImport: () => Promise<ImportResult>):
  Promise<ImportResult> {
  const whole = destinations.length === 1;
  const report = (result: ImportResult): Record<string, unknown> => {
    if (!result.success) return { success: false };
    const counts = result.itemsImported;
    return { success: true, data: { status: "imported",
      ...(whole ? { removed_count: counts?.memoriesDeleted, skipped_duplicates: counts?.memoriesSkipped } : {}) } };
  };
  const nested = destinations.reduceRight<() => Promise<ImportResult>>(
    (inner, destination) => () => shadowSite("manual", () => importCommand(destination, strategy), inner, report),
    ownImport);
  return nested();
}

export async function shadowImportWorkspaceMemoryBundle(serverDiscId: string, importerUserDiscId: string,
  mappings: WorkspaceMappings, strategy: Strategy): Promise<ImportResult> {
  const own = () => importRepository.importWorkspaceMemoryBundle(serverDiscId, importerUserDiscId, mappings, strategy);
  // A persona the server does not have: TomoriBot's import decides alone.
  const destinations = await workspaceDestinations(serverDiscId, importerUserDiscId, mappings).catch(() => null);
  return destinations === null ? own() : shadowImport(destinations, strategy, own);
}

export function shadowImportPersonalMemoryBundle(userDiscId: string, mappings: PersonalMappings,
  strategy: Strategy): Promise<ImportResult> {
  const own = () => importRepository.importPersonalMemoryBundle(userDiscId, mappings, strategy);
  return shadowImport(personalDestinations(userDiscId, mappings), strategy, own);
}
