/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

export interface MemoryEvicted {
  command_id: string;
  content_forgotten: string;
  decay_days: number;
  event_id: string;
  lineage_id: number;
  memory_id: number;
  occurred_at: string;
  owner_id: string;
  replaced_by: number;
  scope: "personal" | "server";
}
