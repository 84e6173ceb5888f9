/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * `memory.reinforce`: the memories a reply used.
 */
export interface ReinforceMemories {
  command_id: string;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  lineage_id: number;
  /**
   * @maxItems 500
   */
  memories?: MemoryRef[];
  reply_to?: string | null;
  workspace_id: string;
}
export interface MemoryRef {
  memory_id: number;
  scope: "personal" | "server";
}
