/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Result of memory.reinforce.
 */
export interface ReinforceResult {
  command_id: string;
  data: ReinforceData;
  error?: string | null;
  invalidated?: CacheKey[];
  success: boolean;
}
export interface ReinforceData {
  available?: number;
  count?: number;
  memory_id?: number;
  memory_ids?: number[];
  reason?: string | null;
  requested?: number;
  skipped_duplicates?: number;
  status: "failed" | "reinforced";
}
export interface CacheKey {
  cache: "tomori_state" | "user";
  key: string;
}
