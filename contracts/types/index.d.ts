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
export type CommandOutcome = CommandOutcome1;
/**
 * The result lookup's answer to an empty request: the stored result of a processed command (a create's result or another command's result; their status enums keep the two apart), or null when it has not been processed. Ask with {"answer": "outcome"} to learn more.
 */
export type LookupResult = CommandResult | OpResult | null;

export interface MemoryWorkerPayloads {
  CacheInvalidate?: CacheInvalidate;
  Envelope?: Envelope;
  CommandOutcome?: CommandOutcome;
  OutcomeRequest?: OutcomeRequest;
  LookupResult?: LookupResult;
  CreateMemory?: CreateMemory;
  MemoryEvicted?: MemoryEvicted;
  ManualMemory?: ManualMemory;
  ReinforceMemories?: ReinforceMemories;
  MemoryRemoved?: MemoryRemoved;
  MemorySaved?: MemorySaved;
  SeedBio?: SeedBio;
  MemoryEvictionMetric?: MemoryEvictionMetric;
  NoticePlan?: NoticePlan;
  InvalidCommandResult?: InvalidCommandResult;
  ManualResult?: ManualResult;
  OpResult?: OpResult;
  ReinforceResult?: ReinforceResult;
  CommandResult?: CommandResult;
  SeedBioResult?: SeedBioResult;
}
export interface CacheInvalidate {
  cache: "tomori_state" | "user";
  command_id: string;
  event_id: string;
  key: string;
  occurred_at: string;
  reason: string;
}
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
export interface CommandOutcome1 {
  command_id: string;
  dead_letter?: DeadLetterInfo;
  kind?: "create" | "manual" | "reinforce" | "seed_bio";
  outcome: "dead_lettered" | "processed" | "queued" | "unknown";
  result?: CommandResult | OpResult;
  workspace_id: string;
}
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
/**
 * The body of a lookup request that wants the outcome rather than the bare result.
 */
export interface OutcomeRequest {
  answer: "outcome";
}
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
export interface MemoryEvicted {
  command_id: string;
  content_forgotten: string;
  decay_days: number;
  event_id: string;
  lineage_id: number;
  memory_id: number;
  occurred_at: string;
  owner_id: string;
  replaced_by: number;
  scope: "personal" | "server";
}
/**
 * `memory.manual`: the `/memories` and `/personal memories` panels.
 */
export interface ManualMemory {
  action: "add" | "add_batch" | "edit" | "remove";
  actor: Actor;
  command_id: string;
  content?: string | null;
  contents?: string[] | null;
  identity_id?: string | null;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  lineage_id: number;
  memory_id?: number | null;
  persona_id?: number | null;
  reply_to?: string | null;
  scope: "personal" | "server";
  tags?: string | string[] | null;
  workspace_id: string;
}
export interface Actor {
  id: string;
  is_manager?: boolean;
}
/**
 * `memory.reinforce`: the memories a reply used.
 */
export interface ReinforceMemories {
  command_id: string;
  /**
   * RFC 3339, set by the bot.
   */
  issued_at: string;
  lineage_id: number;
  /**
   * @maxItems 500
   */
  memories?: MemoryRef[];
  reply_to?: string | null;
  workspace_id: string;
}
export interface MemoryRef {
  memory_id: number;
  scope: "personal" | "server";
}
export interface MemoryRemoved {
  command_id: string;
  content: string;
  event_id: string;
  lineage_id: number;
  memory_id: number;
  occurred_at: string;
  owner_id: string;
  scope: "personal" | "server";
}
export interface MemorySaved {
  command_id: string;
  content: string;
  event_id: string;
  evicted?: EvictedMemory | null;
  lineage_id: number;
  manually_written: boolean;
  memory_id: number;
  notice?: NoticePlan | null;
  occurred_at: string;
  owner_id: string;
  scope: "personal" | "server";
  source: "bio_seed" | "import" | "legacy" | "manual" | "model";
  workspace_id: string;
}
export interface EvictedMemory {
  content: string;
  memory_id: number;
}
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
/**
 * Exactly these two fields: no content, no ids. The event id rides in the Nats-Msg-Id
 * header and is opaque: it leads back to no command, workspace or content.
 */
export interface MemoryEvictionMetric {
  decay_days: number;
  scope: "personal" | "server";
}
/**
 * The answer to a command of any kind that could not be decoded or whose envelope is
 * invalid (docs/design.md, section 3.2); it is dead-lettered with reason invalid_command, never applied.
 * A create's reply of this kind also fits the create result.
 */
export interface InvalidCommandResult {
  command_id: string;
  data: InvalidData;
  error: string;
  success: false;
}
export interface InvalidData {
  reason: string;
  status: "memory_command_invalid";
}
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
/**
 * Result of memory.reinforce.
 */
export interface ReinforceResult {
  command_id: string;
  data: ReinforceData;
  error?: string | null;
  invalidated?: CacheKey[];
  success: boolean;
}
export interface ReinforceData {
  available?: number;
  count?: number;
  memory_id?: number;
  memory_ids?: number[];
  reason?: string | null;
  requested?: number;
  skipped_duplicates?: number;
  status: "failed" | "reinforced";
}
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
