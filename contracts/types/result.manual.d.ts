/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Result of memory.manual.
 */
export interface ManualResult {
  command_id: string;
  data: ManualData;
  error?: string | null;
  invalidated?: CacheKey[];
  success: boolean;
}
export interface ManualData {
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
    | "removed"
    | "teaching-disabled"
    | "unchanged"
    | "updated";
}
export interface CacheKey {
  cache: "tomori_state" | "user";
  key: string;
}
