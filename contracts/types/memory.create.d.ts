/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * `memory.create`: the model's `create_long_term_memory` tool call.
 */
export interface CreateMemory {
  bot_user_id: string;
  channel: Channel;
  command_id: string;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  /**
   * @maxItems 256
   */
  member_matches?: MemberMatch[];
  /**
   * @maxItems 256
   */
  participants?: Participant[];
  persona: Persona;
  reply_to?: string | null;
  retrieval?: Retrieval;
  tool_args?: unknown;
  triggerer?: Triggerer | null;
  workspace_id: string;
}
export interface Channel {
  everyone_can_view?: boolean;
  id: string;
  is_dm?: boolean;
  is_private?: boolean;
  url?: string | null;
}
export interface MemberMatch {
  display_name?: string | null;
  global_name?: string | null;
  id: string;
  is_bot?: boolean;
  nickname?: string | null;
  username?: string | null;
}
export interface Participant {
  /**
   * @maxItems 64
   */
  aliases?: string[];
  id: string;
  kind?: "discord" | "matrix" | "proxy";
  label?: string;
  primary_label?: string | null;
}
export interface Persona {
  id: number;
  lineage_id: number;
  name: string;
}
export interface Retrieval {
  embedding_credentials?: boolean;
  embedding_model?: string | null;
  rag_available?: boolean;
}
export interface Triggerer {
  id: string;
  name: string;
}
