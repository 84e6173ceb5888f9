/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * The body of a lookup request that wants the outcome rather than the bare result.
 */
export interface OutcomeRequest {
  answer: "outcome";
}
