/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Result of memory.seed_bio.
 */
export interface SeedBioResult {
  command_id: string;
  data: SeedBioData;
  error?: string | null;
  invalidated?: CacheKey[];
  success: boolean;
}
export interface SeedBioData {
  available?: number;
  count?: number;
  memory_id?: number;
  memory_ids?: number[];
  reason?: string | null;
  requested?: number;
  skipped_duplicates?: number;
  status: "failed" | "seeded" | "skipped";
}
export interface CacheKey {
  cache: "tomori_state" | "user";
  key: string;
}
