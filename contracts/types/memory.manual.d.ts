/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * `memory.manual`: the `/memories` and `/personal memories` panels.
 */
export interface ManualMemory {
  action: "add" | "add_batch" | "edit" | "remove";
  actor: Actor;
  command_id: string;
  content?: string | null;
  contents?: string[] | null;
  identity_id?: string | null;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  lineage_id: number;
  memory_id?: number | null;
  persona_id?: number | null;
  reply_to?: string | null;
  scope: "personal" | "server";
  tags?: string | string[] | null;
  workspace_id: string;
}
export interface Actor {
  id: string;
  is_manager?: boolean;
}
