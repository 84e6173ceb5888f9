/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Exactly these two fields: no content, no ids. The event id rides in the Nats-Msg-Id
 * header and is opaque: it leads back to no command, workspace or content.
 */
export interface MemoryEvictionMetric {
  decay_days: number;
  scope: "personal" | "server";
}
