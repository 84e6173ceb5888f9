/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

export interface CacheInvalidate {
  cache: "tomori_state" | "user";
  command_id: string;
  event_id: string;
  key: string;
  occurred_at: string;
  reason: string;
}
