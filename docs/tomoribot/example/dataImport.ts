// The data import's memory bundles (ImportRepository.importWorkspaceMemoryBundle and
// importPersonalMemoryBundle, the /data import command) on the worker: each destination of the
// bundle (a persona's lineage) is one memory.manual `import`, with the strategy (merge skips exact
// content-and-tags duplicates; replace removes the destination's memories first) and the entries.
// The worker checks every entry and the limit and writes the destination in one transaction under
// the owner's lock. Same signatures and results as the repository methods, so the command's code
// does not change.
import type { TomoriState } from "@/types/db/schema";
import { personaRepository } from "@/utils/db/repositories";
import type { ImportResult, MemoryItem } from "@/utils/db/repositories/ImportRepository";
import { log } from "@/utils/misc/logger";
import { memory } from "./memory.js";
import { sendManual } from "./panels.js";
import type { ManualData } from "./panels.js";

export type Strategy = "merge" | "replace";
export interface Destination {
  scope: "server" | "personal";
  workspaceId: string;
  actorId: string;
  lineageId: number;
  personaId: number | null;
  memories: MemoryItem[];
}

const UPDATE_FAILED = "commands.data.import.error_update_failed";

/** One destination as a memory.manual import (shadow mode sends the same: shadowDataImport.ts). */
export function importCommand(destination: Destination, strategy: Strategy) {
  return {
    command_id: crypto.randomUUID(),
    workspace_id: destination.workspaceId,
    // The /data import of server memories is a manager's command.
    actor: { id: destination.actorId, is_manager: destination.scope === "server" },
    scope: destination.scope,
    action: "import" as const,
    lineage_id: destination.lineageId,
    persona_id: destination.personaId,
    strategy,
    entries: destination.memories.map(({ content, tags }) => ({ content, tags })),
  };
}

/**
 * One command per destination, in the bundle's order. Each destination is all or nothing; a
 * refused one stops the import, and the destinations before it stay imported.
 */
async function importDestinations(destinations: Destination[], strategy: Strategy): Promise<ImportResult> {
  if (destinations.length === 0 || new Set(destinations.map((d) => d.lineageId)).size < destinations.length) {
    return { success: false, error: UPDATE_FAILED };
  }
  const totals = { memoriesInserted: 0, memoriesSkipped: 0, memoriesDeleted: 0 };
  for (const destination of destinations) {
    const client = memory();
    const data: ManualData | null = await sendManual(importCommand(destination, strategy), (sent) => client.manual(sent));
    if (data === null) return { success: false, error: "commands.data.import.error_import_failed" };
    if (data.status !== "imported") {
      log.warn(`memory import of lineage ${destination.lineageId} refused: ${data.status}: ${data.reason}`);
      return { success: false, error: UPDATE_FAILED };
    }
    totals.memoriesInserted += data.memory_ids?.length ?? 0;
    totals.memoriesSkipped += data.skipped_duplicates ?? 0;
    totals.memoriesDeleted += data.removed_count ?? 0;
  }
  return { success: true, itemsImported: { ...totals, memoriesCount: totals.memoriesInserted } };
}

export type WorkspaceMappings = ReadonlyArray<{ bucketName: string; personaId: number; memories: MemoryItem[] }>;
export type PersonalMappings = ReadonlyArray<{ bucketName: string; personaLineageId: number; memories: MemoryItem[] }>;

/** A workspace bundle's destinations, each persona's lineage; null when a persona is not the server's. */
export async function workspaceDestinations(serverDiscId: string, importerUserDiscId: string,
  mappings: WorkspaceMappings): Promise<Destination[] | null> {
  const personas: TomoriState[] = await personaRepository.loadAllForServer(serverDiscId);
  const destinations: Destination[] = [];
  for (const mapping of mappings) {
    const persona = personas.find((candidate) => candidate.persona_id === mapping.personaId);
    if (persona === undefined) return null;
    destinations.push({
      scope: "server", workspaceId: serverDiscId, actorId: importerUserDiscId,
      lineageId: persona.persona_lineage_id, personaId: mapping.personaId, memories: mapping.memories,
    });
  }
  return destinations;
}

/** A personal bundle's destinations. Personal memories belong to no guild: the workspace is the user's own, as in a DM. */
export function personalDestinations(userDiscId: string, mappings: PersonalMappings): Destination[] {
  return mappings.map((mapping) => ({
    scope: "personal", workspaceId: userDiscId, actorId: userDiscId,
    lineageId: mapping.personaLineageId, personaId: null, memories: mapping.memories,
  }));
}

export async function importWorkspaceMemoryBundle(serverDiscId: string, importerUserDiscId: string,
  mappings: WorkspaceMappings, strategy: Strategy): Promise<ImportResult> {
  const destinations = await workspaceDestinations(serverDiscId, importerUserDiscId, mappings);
  if (destinations === null) return { success: false, error: "commands.data.import.error_no_server_data" };
  return importDestinations(destinations, strategy);
}

export function importPersonalMemoryBundle(userDiscId: string, mappings: PersonalMappings,
  strategy: Strategy): Promise<ImportResult> {
  return importDestinations(personalDestinations(userDiscId, mappings), strategy);
}
