/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * `memory.seed_bio`: the one-time bio snapshot of a new proxy identity.
 */
export interface SeedBio {
  bio?: string | null;
  command_id: string;
  identity_user_id: string;
  is_new_identity: boolean;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  reply_to?: string | null;
  workspace_id: string;
}
