/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Result of memory.manual, memory.reinforce and memory.seed_bio.
 */
export interface OpResult {
  command_id: string;
  data: OpData;
  error?: string | null;
  invalidated?: CacheKey[];
  success: boolean;
}
/**
 * `data` of the other commands' results: a status, a reason, and what the status needs.
 */
export interface OpData {
  available?: number;
  count?: number;
  memory_id?: number;
  memory_ids?: number[];
  reason?: string | null;
  requested?: number;
  skipped_duplicates?: number;
  status:
    | "added"
    | "all-duplicates"
    | "batch-limit-reached"
    | "blacklisted"
    | "content-too-long"
    | "empty-content"
    | "failed"
    | "host-protected"
    | "limit-reached"
    | "not-found"
    | "privacy-blocked"
    | "reinforced"
    | "removed"
    | "seeded"
    | "skipped"
    | "teaching-disabled"
    | "unchanged"
    | "updated";
}
export interface CacheKey {
  cache: "tomori_state" | "user";
  key: string;
}
