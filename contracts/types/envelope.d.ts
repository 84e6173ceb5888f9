/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Fields every command carries.
 */
export interface Envelope {
  command_id: string;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  reply_to?: string | null;
  workspace_id: string;
}
