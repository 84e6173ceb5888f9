/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

export interface MemoryRemoved {
  command_id: string;
  content: string;
  event_id: string;
  lineage_id: number;
  memory_id: number;
  occurred_at: string;
  owner_id: string;
  scope: "personal" | "server";
}
