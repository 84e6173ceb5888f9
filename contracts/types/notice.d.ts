/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * Where the notice of a save goes. Both destinations null: it goes nowhere, and
 * dropped_reason says why; thought_log_skipped says why the thought log got no copy.
 */
export interface NoticePlan {
  conversation: ConversationNotice | null;
  dropped_reason: ("hidden_key_no_thought_log" | "hidden_key_non_public_channel") | null;
  hidden: boolean;
  key: "memory_update";
  thought_log: ThoughtLogNotice | null;
  thought_log_skipped: ("dm" | "listed_private" | "not_configured" | "not_readable_by_everyone" | "private") | null;
  title: string;
  verbosity: "minimal" | "verbose";
  version: 1;
}
/**
 * Post in the channel the command came from: the title only (mode title) or the card.
 */
export interface ConversationNotice {
  attachment: Attachment | null;
  card: Card | null;
  channel_id: string;
  expand: Expand | null;
  mode: "card" | "title";
  title: string;
}
/**
 * The uncut text as an ephemeral file, when it exceeds an embed description.
 */
export interface Attachment {
  content: string;
  ephemeral: true;
  filename: "notice.txt";
}
/**
 * An embed: title, fields in order, and a footer naming the persona.
 */
export interface Card {
  fields: CardField[];
  footer: string;
  title: string;
}
/**
 * A field of the card: "Scope", "Saved" and, for an eviction, "Forgotten"; a value over
 * Discord's 1024-character field limit is cut and ends in an ellipsis.
 */
export interface CardField {
  name: string;
  value: string;
}
/**
 * An action showing the uncut text: as an embed description when it fits 4096
 * characters, else as the ephemeral notice.txt attachment (description null).
 */
export interface Expand {
  delivery: "attachment" | "description";
  description: string | null;
  label: string;
}
/**
 * Post the full card in the workspace's thought-log channel, linking the source.
 */
export interface ThoughtLogNotice {
  attachment: Attachment | null;
  card: Card;
  channel_id: string;
  expand: Expand | null;
  source_url: string | null;
}
