/* Generated from contracts/schema by `make schemas` (json-schema-to-typescript); do not edit. */

/**
 * What became of one command of one workspace.
 *
 * - processed: applied (or refused) exactly once; `result` is the stored result and `kind`
 *   the command kind it belongs to. Re-sending changes nothing.
 * - queued: stored in MEMORY_COMMANDS and not yet processed (or being processed): wait.
 * - dead_lettered: in MEMORY_DLQ, not applied; `dead_letter` says why. invalid_command and
 *   unsupported_command will fail again as sent; the others may succeed if re-sent with a
 *   new Nats-Msg-Id once the cause is gone (or an operator replays it).
 * - unknown: none of these: never stored (re-send it, same command_id, new Nats-Msg-Id),
 *   or processed or dead-lettered longer ago than the inbox and dead-letter retention.
 */
export type CommandOutcome = {
  command_id: string;
  dead_letter?: DeadLetterInfo;
  kind?: "create" | "manual" | "reinforce" | "seed_bio";
  outcome: "dead_lettered" | "processed" | "queued" | "unknown";
  result?: CommandResult | OpResult;
  workspace_id: string;
};

/**
 * Why the worker set the command aside (its entry in MEMORY_DLQ).
 */
export interface DeadLetterInfo {
  allowed_reply_prefixes: string[];
  dead_lettered_at?: string | null;
  deliveries: number;
  error: string;
  reason: "invalid_command" | "max_deliver_exhausted" | "permanent_error" | "unsupported_command";
  reply_to_allowed: boolean;
}
export interface CommandResult {
  command_id: string;
  data: ResultData;
  error?: string | null;
  invalidated?: CacheKey[];
  message?: string | null;
  notice?: NoticePlan | null;
  success: boolean;
}
export interface ResultData {
  candidates?: string[];
  content_forgotten?: string | null;
  content_saved?: string | null;
  current_count?: number;
  max_allowed?: number;
  memory_id?: number | null;
  reason?: string | null;
  scope?: string | null;
  status:
    | "memory_command_invalid"
    | "memory_save_failed_ambiguous_user"
    | "memory_save_failed_db_error"
    | "memory_save_failed_disabled"
    | "memory_save_failed_internal_error"
    | "memory_save_failed_invalid_args"
    | "memory_save_failed_invalid_content"
    | "memory_save_failed_limit_exceeded"
    | "memory_save_failed_privacy_restricted"
    | "memory_save_failed_user_not_found"
    | "memory_saved_successfully"
    | "memory_saved_with_eviction";
  target_user?: string;
}
export interface CacheKey {
  cache: "tomori_state" | "user";
  key: string;
}
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
