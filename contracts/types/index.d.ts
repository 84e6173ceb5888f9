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
 * The result lookup's answer to an empty request: the stored result of a processed command (a create's result, an update's, or another command's result; their status enums keep them apart), or null when it has not been processed. Ask with {"answer": "outcome"} to learn more.
 */
export type LookupResult = CommandResult | OpResult | UpdateResult | null;

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
  ShadowReport?: ShadowReport;
  UpdateMemory?: UpdateMemory;
  MemoryUpdated?: MemoryUpdated;
  MemoryEvictionMetric?: MemoryEvictionMetric;
  NoticePlan?: NoticePlan;
  InvalidCommandResult?: InvalidCommandResult;
  ManualResult?: ManualResult;
  OpResult?: OpResult;
  ReinforceResult?: ReinforceResult;
  CommandResult?: CommandResult;
  SeedBioResult?: SeedBioResult;
  ShadowResult?: ShadowResult;
  UpdateResult?: UpdateResult;
}
/**
 * Drop this bot cache entry: published before the same command's memory.saved (or
 * memory.updated, memory.removed), so a cache node that applies it first never serves the
 * value from before the change.
 */
export interface CacheInvalidate {
  /**
   * tomori_state (a workspace's state, with its server memories) or user (a user's state, with their personal memories).
   */
  cache: "tomori_state" | "user";
  /**
   * The command that caused the event.
   */
  command_id: string;
  /**
   * The event's id, also its Nats-Msg-Id header: derived from the command id, so a retried command re-emits the same ids; de-duplicate redeliveries by it.
   */
  event_id: string;
  /**
   * The entry: the workspace id (tomori_state) or the user's id (user).
   */
  key: string;
  /**
   * When the worker processed the command (RFC 3339, UTC).
   */
  occurred_at: string;
  /**
   * What changed: memory_saved (a model save), memory_updated or memory_deleted (a model's update_long_term_memory), memory_add, memory_add_batch, memory_edit, memory_remove (a panel) or bio_seeded.
   */
  reason: string;
}
/**
 * Fields every command carries.
 */
export interface Envelope {
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
export interface CommandOutcome1 {
  /**
   * The command asked about.
   */
  command_id: string;
  /**
   * dead_lettered only: why.
   */
  dead_letter?: DeadLetterInfo;
  /**
   * processed only: the command's kind, the token of the subject it was published to.
   */
  kind?: "create" | "manual" | "reinforce" | "seed_bio" | "shadow" | "update";
  /**
   * processed, queued, dead_lettered or unknown: whether to use the result, wait, give up or re-send.
   */
  outcome: "dead_lettered" | "processed" | "queued" | "unknown";
  /**
   * True when the worker stopped reading the workspace's queue or dead letters before their end (more than it reads for one lookup, or out of time for it). Never with processed. A queued or dead-lettered answer is true of what was read, and a later dead letter may exist; unknown means not among what was read, so the command may be queued or dead-lettered further on: ask again later before re-sending.
   */
  partial?: boolean;
  /**
   * processed only: the stored result, byte for byte what the first reply carried.
   */
  result?: CommandResult | OpResult | UpdateResult;
  /**
   * Its workspace (a lookup only ever sees its own workspace's commands).
   */
  workspace_id: string;
}
/**
 * Why the worker set the command aside (its entry in MEMORY_DLQ).
 */
export interface DeadLetterInfo {
  /**
   * The operator's REPLY_SUBJECT_PREFIXES, for the bot to fix its reply subject.
   */
  allowed_reply_prefixes: string[];
  /**
   * When it was dead-lettered; null if unknown.
   */
  dead_lettered_at?: string | null;
  /**
   * How many deliveries the worker spent on it.
   */
  deliveries: number;
  /**
   * What went wrong, on one line.
   */
  error: string;
  /**
   * invalid_command (undecodable, a bad envelope, a reply_to not allowed) and unsupported_command fail again as sent: give up. max_deliver_exhausted and permanent_error may succeed when re-sent (same command_id, new Nats-Msg-Id) once the cause is gone.
   */
  reason: "invalid_command" | "max_deliver_exhausted" | "permanent_error" | "unsupported_command";
  /**
   * False when the command's reply_to is outside the allowed prefixes: it got no reply, and re-sending it unchanged is refused the same way.
   */
  reply_to_allowed: boolean;
}
/**
 * The result of `memory.create`, published to reply_to and kept for the result lookup;
 * every repeat of the command_id gets these same bytes.
 */
export interface CommandResult {
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and its details: the tool result the model sees.
   */
  data: ResultData;
  /**
   * The failure text (the same as data.reason); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the save made stale. Drop them from the bot's own caches before posting the notice, so the next turn sees the new memory; the same keys are also published as cache.invalidate events for other processes. Empty for a refusal.
   */
  invalidated?: CacheKey[];
  /**
   * "Memory saved successfully" on success; null otherwise.
   */
  message?: string | null;
  /**
   * Where the memory_update notice goes and what it shows (the notice plan), set for a save and null for a refusal. The bot renders and posts it; a failed post never undoes the save.
   */
  notice?: NoticePlan | null;
  /**
   * True when the memory was saved (with or without an eviction).
   */
  success: boolean;
}
/**
 * `data` of a create's result, in the words of the model's tool (give it to the model as is).
 */
export interface ResultData {
  /**
   * memory_save_failed_ambiguous_user only: up to 3 labels of the people the name matched, for the model to ask which one is meant.
   */
  candidates?: string[];
  /**
   * With memory_saved_with_eviction, the text of the dormant memory that was forgotten to make room; null otherwise.
   */
  content_forgotten?: string | null;
  /**
   * The text stored, after sanitizing (only the {user}, {bot} and {char} placeholders survive; a bridge user's {user} is replaced by their name); null unless saved.
   */
  content_saved?: string | null;
  /**
   * memory_save_failed_limit_exceeded only: how many memories the owner has in this lineage.
   */
  current_count?: number;
  /**
   * memory_save_failed_limit_exceeded only: the owner's cap.
   */
  max_allowed?: number;
  /**
   * The saved memory's id (server_memory_id or personal_memory_id); null unless saved.
   */
  memory_id?: number | null;
  /**
   * Why it failed, worded for the model to relay to the user (what happened and what they can do: /memories, /personal memories, /personal config); the same text as error. null on success.
   */
  reason?: string | null;
  /**
   * The scope the save ended in, in the tool's words: server_wide or target_user (a target_user save about the bot or a bridge user ends server_wide); null when it was not known (bad arguments, a failure before the arguments were read).
   */
  scope?: string | null;
  /**
   * What happened, one of TomoriBot's own status strings: memory_saved_successfully, memory_saved_with_eviction, or a memory_save_failed_* refusal (memory_command_invalid when the command itself could not be read). Statuses are only ever added.
   */
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
  /**
   * For a personal save, and for refusals about a target: the name the target was resolved to (or the name the model gave, when nobody matched).
   */
  target_user?: string;
}
/**
 * A bot cache entry the command made stale.
 */
export interface CacheKey {
  /**
   * tomori_state (the workspace's state, with its server memories) or user (a user's state, with their personal memories).
   */
  cache: "tomori_state" | "user";
  /**
   * The entry's key: the workspace id for tomori_state, the user's Discord id (or a proxy identity's synthetic id) for user.
   */
  key: string;
}
/**
 * Where the notice of a save goes. Both destinations null: it goes nowhere, and
 * dropped_reason says why; thought_log_skipped says why the thought log got no copy.
 */
export interface NoticePlan {
  /**
   * What to post in the command's channel; null when the key is hidden.
   */
  conversation: ConversationNotice | null;
  /**
   * Set only when the notice goes nowhere (hidden key, and no thought-log copy): hidden_key_no_thought_log or hidden_key_non_public_channel.
   */
  dropped_reason: ("hidden_key_no_thought_log" | "hidden_key_non_public_channel") | null;
  /**
   * The same notice as TomoriBot's embed helper takes it (keys, variables, footer, full content, ref), for a bot that delivers through that helper; added in issue 37, version still 1.
   */
  embed: Embed;
  /**
   * True when memory_update is among the workspace's hidden notice keys: nothing goes to the conversation.
   */
  hidden: boolean;
  /**
   * The notice key, memory_update: what the workspace's hidden notice keys are matched against.
   */
  key: "memory_update";
  /**
   * What to post in the thought-log channel; null when no copy is due or allowed.
   */
  thought_log: ThoughtLogNotice | null;
  /**
   * Why the thought log got no copy although one was due (minimal or hidden): not_configured, or the channel's privacy (dm, private, listed_private, not_readable_by_everyone). null when the copy was made, and in verbose mode.
   */
  thought_log_skipped: ("dm" | "listed_private" | "not_configured" | "not_readable_by_everyone" | "private") | null;
  /**
   * "Memory saved", or "Memory saved (one forgotten to make room)" after an eviction; "Memory updated" or "Memory deleted" for memory.update.
   */
  title: string;
  /**
   * The workspace's notice verbosity the plan follows: minimal (the conversation gets the title, the thought log the card) or verbose (the conversation gets the card, no thought-log copy).
   */
  verbosity: "minimal" | "verbose";
  /**
   * The plan's format version, 1; a new version is a new shape.
   */
  version: 1;
}
/**
 * Post in the channel the command came from: the title only (mode title) or the card.
 */
export interface ConversationNotice {
  /**
   * Set when the uncut text exceeds 4096 characters: what the expand action sends.
   */
  attachment: Attachment | null;
  /**
   * The card to post; set exactly when mode is card.
   */
  card: Card | null;
  /**
   * The command's channel.id.
   */
  channel_id: string;
  /**
   * Set when a card field was cut: offer this action to show the uncut text.
   */
  expand: Expand | null;
  /**
   * title (minimal verbosity: post the title alone) or card (verbose: post the card).
   */
  mode: "card" | "title";
  /**
   * The text to post in title mode.
   */
  title: string;
}
/**
 * The uncut text as an ephemeral file, when it exceeds an embed description.
 */
export interface Attachment {
  /**
   * The file's text: title, scope, persona, then the saved (and forgotten) text, uncut.
   */
  content: string;
  /**
   * Always true: show it only to the person who asked to expand.
   */
  ephemeral: true;
  /**
   * Always notice.txt.
   */
  filename: "notice.txt";
}
/**
 * An embed: title, fields in order, and a footer naming the persona.
 */
export interface Card {
  /**
   * The embed's fields, in order.
   */
  fields: CardField[];
  /**
   * The embed's footer: "Saved by <persona name>" ("Updated by", "Deleted by").
   */
  footer: string;
  /**
   * The embed's title (the plan's title).
   */
  title: string;
}
/**
 * A field of the card: "Scope", "Saved" (an update's "Updated", a delete's "Deleted") and, for
 * an eviction, "Forgotten"; a value over Discord's 1024-character field limit is cut and ends in
 * an ellipsis.
 */
export interface CardField {
  /**
   * The field's name: Scope, Saved, Updated, Deleted or Forgotten.
   */
  name: string;
  /**
   * Its value: the scope label ("server", "personal: <name>") or the memory's text, cut to 1024 characters; "(empty)" for an empty text, which Discord would reject.
   */
  value: string;
}
/**
 * An action showing the uncut text: as an embed description when it fits 4096
 * characters, else as the ephemeral notice.txt attachment (description null).
 */
export interface Expand {
  /**
   * description: show `description` (in an ephemeral embed, say); attachment: send the destination's `attachment` instead.
   */
  delivery: "attachment" | "description";
  /**
   * The uncut text when delivery is description; null otherwise.
   */
  description: string | null;
  /**
   * The action's label (a button's text): "Show full text".
   */
  label: string;
}
/**
 * The notice in the words of TomoriBot's own embed helper (`sendMemoryEmbedWithExpand(context,
 * options, fullMemoryContent, ref)`): its locale keys and variables, so a TomoriBot bot delivers
 * the plan through the helper it already has, which renders the locale, the mentions, the
 * 600-character preview, the expand button and the Minimal/Verbose routing itself.
 */
export interface Embed {
  /**
   * success (a memory learned), memory_update (updated) or error (deleted): TomoriBot's ColorCode.SUCCESS, MEMORY_UPDATE and ERROR.
   */
  color: "error" | "memory_update" | "success";
  /**
   * The description's locale key, e.g. genai.self_teach.personal_memory_learned_description.
   */
  description_key: string;
  /**
   * The description's variables: memory_content (the content as stored, placeholders such as {user} kept: the helper renders them and cuts the preview), user_nickname for a personal memory, memory_id (the id as a decimal string, as TomoriBot passes memoryId.toString()) for an update or a delete.
   */
  description_vars: {
    [k: string]: string;
  };
  /**
   * The footer's locale key: genai.self_teach.server_memory_footer for a server memory; for a personal one personal_memory_footer_personalization_disabled (personal memories are off in this workspace), personal_memory_footer_user_blacklisted (the person is blacklisted from personalization here) or personal_memory_footer_manage.
   */
  footer_key: string;
  /**
   * The memory's whole content, as stored: what the expand button shows.
   */
  full_content: string;
  /**
   * The memory the notice stands for, passed as the helper's ref (a create's save); null when there is none (a delete, and a memory.update's edit: TomoriBot's update tool passes no ref).
   */
  ref: EmbedRef | null;
  /**
   * The title's locale key, e.g. genai.self_teach.server_memory_learned_title.
   */
  title_key: string;
  /**
   * The title's variables: persona_nickname (the command's persona name) and, for a personal memory, user_nickname (the name the target was resolved to).
   */
  title_vars: {
    [k: string]: string;
  };
}
/**
 * The memory a Minimal conversation notice stands for (TomoriBot's `MinimalNoticeRef`):
 * what `recordMinimalNoticeRef(messageId, ref)` records once the title is posted.
 */
export interface EmbedRef {
  /**
   * The memory's server_memory_id or personal_memory_id.
   */
  id: number;
  /**
   * server_memory or personal_memory: which table id is from.
   */
  kind: "personal_memory" | "server_memory";
}
/**
 * Post the full card in the workspace's thought-log channel, linking the source.
 */
export interface ThoughtLogNotice {
  /**
   * As for the conversation: set when the uncut text exceeds 4096 characters.
   */
  attachment: Attachment | null;
  /**
   * The full card (always, whatever the verbosity).
   */
  card: Card;
  /**
   * The workspace's thought-log channel.
   */
  channel_id: string;
  /**
   * As for the conversation: set when a card field was cut.
   */
  expand: Expand | null;
  /**
   * The command's channel.url, to link the copy to its source; null when the command had none.
   */
  source_url: string | null;
}
/**
 * Result of memory.manual, memory.reinforce and memory.seed_bio.
 */
export interface OpResult {
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and what it needs.
   */
  data: OpData;
  /**
   * The refusal or failure text (the same as data.reason); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the change made stale (tomori_state for server memories, user for personal ones): drop them before showing the panel again. Empty when nothing changed, and always for reinforcement.
   */
  invalidated?: CacheKey[];
  /**
   * True when done, and for a skipped seed (a normal outcome); false for a refusal or a failure.
   */
  success: boolean;
}
/**
 * `data` of the other commands' results: a status, a reason, and what the status needs.
 */
export interface OpData {
  /**
   * batch-limit-reached, and an import's limit-reached: how many more memories fit under the cap.
   */
  available?: number;
  /**
   * reinforced: how many memories were marked as used.
   */
  count?: number;
  /**
   * The memory added (one row), updated, kept unchanged, removed or seeded.
   */
  memory_id?: number;
  /**
   * added: the ids of every memory added, in order (one for an add); imported: the ids of every memory the import added, in entry order (empty when it added none).
   */
  memory_ids?: number[];
  /**
   * Why it was refused, skipped or failed, in words for the person using the panel; null when it was done.
   */
  reason?: string | null;
  /**
   * imported: how many memories a replace deleted (0 for a merge).
   */
  removed_count?: number;
  /**
   * batch-limit-reached, and an import's limit-reached: how many new memories the batch or import held.
   */
  requested?: number;
  /**
   * added: how many entries of the batch were skipped as already saved or repeated; imported: how many entries a merge skipped as equal to a stored memory or an earlier entry.
   */
  skipped_duplicates?: number;
  /**
   * What happened (each command kind's result lists its own statuses); failed means the worker gave up on the command after its retries.
   */
  status:
    | "added"
    | "all-duplicates"
    | "batch-limit-reached"
    | "blacklisted"
    | "content-too-long"
    | "empty-content"
    | "failed"
    | "host-protected"
    | "imported"
    | "limit-reached"
    | "managers-only"
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
 * The result of `memory.update`, published to reply_to and kept for the result lookup: the
 * shape of a create's result. Every repeat of the command_id gets the same answer.
 */
export interface UpdateResult {
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and its details: the tool result the model sees.
   */
  data: UpdateData;
  /**
   * The failure text, TomoriBot's (it may differ from data.reason, as TomoriBot's does); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the change made stale. Drop them from the bot's own caches before posting the notice; the same keys are also published as cache.invalidate events for other processes. Empty for a refusal.
   */
  invalidated?: CacheKey[];
  /**
   * On success, TomoriBot's message: "Server memory updated successfully", "Server memory deleted successfully", "Personal memory updated successfully" or "Personal memory deleted successfully"; null otherwise.
   */
  message?: string | null;
  /**
   * Where the memory_update notice goes and what it shows (the notice plan, with its embed: TomoriBot's updated or deleted notice), set on success and null for a refusal. The bot renders and posts it; a failed post never undoes the change.
   */
  notice?: NoticePlan | null;
  /**
   * True when the memory was updated or deleted.
   */
  success: boolean;
}
/**
 * `data` of a memory.update's result, in the words of TomoriBot's update_long_term_memory
 * tool (give it to the model as is). The keys TomoriBot's tool adds only in some cases are
 * present only in those cases.
 */
export interface UpdateData {
  /**
   * memory_update_failed_ambiguous_user only: up to 3 labels of the people the name matched, for the model to ask which one is meant.
   */
  candidates?: string[];
  /**
   * memory_deleted_successfully only: the text the deleted memory had.
   */
  content_deleted?: string;
  /**
   * memory_updated_successfully only: the new text as stored, after sanitizing (only the {user}, {bot} and {char} placeholders survive).
   */
  content_saved?: string;
  /**
   * On success, the id of the memory updated or deleted; null on a failure.
   */
  memory_id?: number | null;
  /**
   * Why it failed, in TomoriBot's words; null on success.
   */
  reason?: string | null;
  /**
   * On success, the memory's scope in the tool's words: server_wide (no target_user) or target_user; null on a failure, where TomoriBot's tool names none.
   */
  scope?: ("server_wide" | "target_user") | null;
  /**
   * What happened, one of TomoriBot's own status strings: memory_updated_successfully, memory_deleted_successfully, or a memory_update_failed_* refusal. Statuses are only ever added.
   */
  status:
    | "memory_deleted_successfully"
    | "memory_update_failed_ambiguous_user"
    | "memory_update_failed_db_error"
    | "memory_update_failed_disabled"
    | "memory_update_failed_error"
    | "memory_update_failed_internal_error"
    | "memory_update_failed_invalid_args"
    | "memory_update_failed_invalid_content"
    | "memory_update_failed_invalid_scope"
    | "memory_update_failed_invalid_target"
    | "memory_update_failed_not_found"
    | "memory_update_failed_privacy_restricted"
    | "memory_update_failed_user_not_found"
    | "memory_updated_successfully";
  /**
   * On a personal success only: the name the target was resolved to.
   */
  target_user?: string;
}
/**
 * The body of a lookup request that wants the outcome rather than the bare result.
 */
export interface OutcomeRequest {
  /**
   * Always "outcome".
   */
  answer: "outcome";
}
/**
 * `memory.create`: the model's `create_long_term_memory` tool call.
 */
export interface CreateMemory {
  /**
   * The bot's own Discord user id: a target that resolves to it (or that resolves to anyone when target_user is the word self) makes the memory server-wide instead of personal.
   */
  bot_user_id: string;
  /**
   * Where the tool call happened: where the notice goes and whether the thought log gets a copy.
   */
  channel: Channel;
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * The guild members the bot found for the target_user text (see MemberMatch). Not read in a DM or for a server_wide save, so it may be left empty there.
   *
   * @maxItems 256
   */
  member_matches?: MemberMatch[];
  /**
   * The conversation's user references the model may name (TomoriBot's participant target index), checked first when resolving target_user.
   *
   * @maxItems 256
   */
  participants?: Participant[];
  /**
   * The speaking persona: whose lineage the memory joins.
   */
  persona: Persona;
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * How memories are retrieved in this turn: whether a save at the cap may replace a dormant memory.
   */
  retrieval?: Retrieval;
  /**
   * The model's arguments exactly as it gave them, decoded from the provider's argument string into a JSON object: memory_content, memory_scope (server_wide or target_user) and, for target_user, target_user (legacy names target_user_nickname and target_user_discord_id are read too). Not validated on decoding: bad arguments are answered with memory_save_failed_invalid_args naming the parameter.
   */
  tool_args?: unknown;
  /**
   * Who caused the turn, with a users row (recorded as the teacher of a server memory); null, or a triggerer without a users row, is refused with memory_save_failed_internal_error.
   */
  triggerer?: Triggerer | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * The channel the tool call came from: it decides where the save's notice may go.
 *
 * A channel is public only when it is not a DM, not private, readable by everyone and not in
 * the workspace's private channel list. Only a save from a public channel is mirrored to the
 * thought-log channel; the conversation notice always goes to this channel (unless the
 * memory_update notice is hidden).
 */
export interface Channel {
  /**
   * False unless every member of the guild can read the channel: @everyone has View Channel and no role or member is denied it (for a thread, on its parent). Otherwise no thought-log copy, so the thought log never shows what not everyone may read. Defaults to true: a bot that cannot tell should send false.
   */
  everyone_can_view?: boolean;
  /**
   * The Discord id of the channel or thread the conversation is in: the conversation notice's channel_id.
   */
  id: string;
  /**
   * True in a direct message with the bot. A DM is never public (no thought-log copy), and target resolution stops after the conversation's participants (there is no member search in a DM).
   */
  is_dm?: boolean;
  /**
   * True when the channel's audience is restricted in a way the other fields do not say: a private thread, or a thread whose parent channel is on the workspace's private channel list (the worker compares only id with that list). No thought-log copy.
   */
  is_private?: boolean;
  /**
   * A link to the message (or channel) the save came from, shown as the thought-log copy's link to its source; null when there is none.
   */
  url?: string | null;
}
/**
 * A guild member the bot found for the target_user name (none in a DM).
 *
 * They stand for what TomoriBot's resolver gets from the guild, which the worker cannot
 * reach: (1) for a target_user that is a Discord id, the member with that id
 * (guild.members.fetch); (2) the member search for the name (guild.members.search with the
 * target_user text, limit 100), and again for the name with one of the persona's naming
 * affixes taken off; (3) the members TomoriBot's database stages fetch by id: those whose
 * persona nickname for this lineage, saved nickname, or composed name matches the name (run
 * the bot's own naming look-ups for the input, and fetch those members). After the
 * conversation's participants, target_user is compared, exactly and after normalizing, with
 * these members' display names, then their persona nicknames and saved nicknames (read from
 * the database), then global names, then usernames, then with an affix off the same way, then
 * with their composed names: the first stage with any match decides, and several distinct
 * members there make the save ambiguous.
 */
export interface MemberMatch {
  /**
   * The name the guild shows for them (discord.js GuildMember.displayName: the guild nickname, else the global name, else the username); null falls back to nickname, global_name and username in that order.
   */
  display_name?: string | null;
  /**
   * Their Discord global display name, if any.
   */
  global_name?: string | null;
  /**
   * The member's Discord user id.
   */
  id: string;
  /**
   * True for bot accounts, which are never memory targets (they are skipped).
   */
  is_bot?: boolean;
  /**
   * Their guild nickname, if any.
   */
  nickname?: string | null;
  /**
   * Their unique Discord username: a target resolved through this member is labelled `display name (@username)` unless the two are the same ignoring case.
   */
  username?: string | null;
}
/**
 * Someone in the conversation the model may name as target_user: one of TomoriBot's
 * conversation user references (`projectConversationUserReferences` of the context's
 * participant target index: a target with an id and at least one tool_target alias).
 */
export interface Participant {
  /**
   * The reference's aliases, the tool_target ones in TomoriBot's priority order (the impersonated identity's name, the saved nickname when exposed, the guild nickname, the global name, the username; the Discord id when nothing else; the persona nickname for a persona, the display name for a bridge user). target_user is matched against these only (after trimming, dropping leading `@`, lowercasing and collapsing spaces): include the label when it is one of them.
   *
   * @maxItems 64
   */
  aliases?: string[];
  /**
   * The reference's targetId: a Discord user id, a Matrix id (`@local:server`) for a bridge user, or a proxy identity's id (`pk:<uuid>`, `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`). target_user equal to it (exactly, after trimming) resolves to this participant.
   */
  id: string;
  /**
   * discord, matrix (a bridge user: a save about them becomes a server memory with `{user}` replaced by their name, since bridge accounts have no user rows) or proxy (a message-proxy identity: saved as its own personal memory, only if every host account allows it). An id shaped like a Matrix id is a bridge user and one shaped like a proxy id is a proxy identity, whatever the kind says.
   */
  kind?: "discord" | "matrix" | "proxy";
  /**
   * The reference's displayLabel: the name the target resolves under (in the reasons, target_user and the notice), and the primary marker: when target_user matches several participants' aliases, the one whose label it also is wins.
   */
  label?: string;
  /**
   * Not read since issue 37 (TomoriBot marks the primary name by the label); kept for bots that send it.
   */
  primary_label?: string | null;
}
/**
 * The persona that is speaking and made the tool call.
 */
export interface Persona {
  /**
   * The persona's row id in the bot's database (TomoriBot: tomoriState.persona_id). Stored on a server memory as the persona that taught it; it does not decide which memories count together (the lineage does). 0 means the bot has none: a create is refused with memory_save_failed_internal_error (critical state missing).
   */
  id: number;
  /**
   * The persona's lineage: memories are kept, counted against the caps and evicted per lineage, so every version of a persona that shares a lineage shares its memories. Must not be 0, which is reserved for a user's global memories: a create with lineage 0 is refused with memory_save_failed_internal_error.
   */
  lineage_id: number;
  /**
   * The persona's display name (TomoriBot's personaNickname), shown in the notice: the embed's persona_nickname, the card's footer "Saved by <name>".
   */
  name: string;
  /**
   * The persona's naming affixes: target_user is also tried with one of them taken off, and people's composed names ("Master Mika") are rebuilt with them. null or absent: the persona has none.
   */
  naming?: PersonaNaming | null;
}
/**
 * How the persona composes people's names (TomoriBot's `PersonaNamingConfig`, the
 * `persona_naming_configs` row of the speaking persona, `tomoriState.naming_config`).
 */
export interface PersonaNaming {
  /**
   * The title put before a name (e.g. neutral "Master"), per addressing style.
   */
  prefixes?: AffixVariants;
  /**
   * The honorific put after a name (e.g. neutral "-san"), per addressing style.
   */
  suffixes?: AffixVariants;
}
/**
 * A naming affix per addressing style (TomoriBot's `Partial<Record<AddressingStyle, string>>`).
 */
export interface AffixVariants {
  /**
   * The affix for people addressed as feminine; null or absent: none set.
   */
  feminine?: string | null;
  /**
   * The affix for people addressed as masculine; null or absent: none set.
   */
  masculine?: string | null;
  /**
   * The affix for everyone else, and for a style with none set.
   */
  neutral?: string | null;
}
/**
 * How the bot retrieves memories in this turn. At the cap, a save may replace a dormant
 * memory only when retrieval picks memories by relevance (all three are set) and the
 * workspace has memory decay on; otherwise it is refused with memory_save_failed_limit_exceeded.
 */
export interface Retrieval {
  /**
   * True when the bot has credentials for that embedding model.
   */
  embedding_credentials?: boolean;
  /**
   * The embedding model in use; null or blank counts as none.
   */
  embedding_model?: string | null;
  /**
   * True when the bot retrieves memories by relevance (embeddings) in this workspace rather than showing the model every memory.
   */
  rag_available?: boolean;
}
/**
 * The person whose message started the turn in which the model called the tool.
 */
export interface Triggerer {
  /**
   * Their id as TomoriBot's resolveTriggererDiscordId gives it (context.userId: a Discord user id, or a proxy identity's id for a proxied message). They must have a users row: without one (or without a triggerer) a create is refused with memory_save_failed_internal_error, as TomoriBot does. A server memory the model saves is recorded as taught by them: without being a manager they can then see and remove it in /memories (and edit it while member teaching is on). It does not choose the memory's target (tool_args.target_user does).
   */
  id: string;
  /**
   * Their display name, as the bot showed it to the model.
   */
  name: string;
}
/**
 * A dormant memory was forgotten to make room for a model save at the cap.
 */
export interface MemoryEvicted {
  /**
   * The command that caused the event.
   */
  command_id: string;
  /**
   * Its text.
   */
  content_forgotten: string;
  /**
   * The workspace's dormancy period: the forgotten memory had not been used (reinforced, or created) for longer than this.
   */
  decay_days: number;
  /**
   * The event's id, also its Nats-Msg-Id header: derived from the command id, so a retried command re-emits the same ids; de-duplicate redeliveries by it.
   */
  event_id: string;
  /**
   * Its lineage (the saving persona's; lineage 0 is never evicted).
   */
  lineage_id: number;
  /**
   * The forgotten memory's id.
   */
  memory_id: number;
  /**
   * When the worker processed the command (RFC 3339, UTC).
   */
  occurred_at: string;
  /**
   * Whose memory it was: the workspace id (server) or the user's id (personal).
   */
  owner_id: string;
  /**
   * The id of the memory saved in its place.
   */
  replaced_by: number;
  /**
   * server or personal: the memory's table.
   */
  scope: "personal" | "server";
}
/**
 * `memory.manual`: the `/memories` and `/personal memories` panels.
 *
 * People write these by hand: they are only trimmed, never rewritten, never evict (at the cap
 * an add is refused), and every add and edit protects the row from eviction.
 */
export interface ManualMemory {
  /**
   * add (content), add_batch (contents and content, all or nothing), edit (memory_id, with content and/or tags), remove (memory_id) or import (strategy and entries: TomoriBot's data import of one lineage's memories, all or nothing; server memories only by a manager).
   */
  action: "add" | "add_batch" | "edit" | "import" | "remove";
  /**
   * Who is using the panel, and whether they manage the server.
   */
  actor: Actor;
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * The text to add, or the new text of an edit (null keeps the stored text). In add_batch, the typed entry, added after the lines of contents.
   */
  content?: string | null;
  /**
   * add_batch only: the entries to add, typically the lines of an uploaded text file. Blank lines are dropped and lines already stored (or repeated) are skipped, ignoring case.
   */
  contents?: string[] | null;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * import only, and required there: the memories to import, each with its own tags. An empty list with replace clears the lineage.
   */
  entries?: ImportEntry[] | null;
  /**
   * Personal scope only: act on the memories of this message-proxy identity (`pk:<uuid>`, `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`), which the actor must host; null for the actor's own.
   */
  identity_id?: string | null;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * Which lineage's memories: for server memories the active persona's lineage; for personal ones a persona's lineage, or 0 for the user's global memories (shown to every persona). An edit or remove finds only rows of exactly this lineage.
   */
  lineage_id: number;
  /**
   * The memory to edit or remove (its server_memory_id or personal_memory_id).
   */
  memory_id?: number | null;
  /**
   * The persona a server memory added here is attributed to; null for none. Ignored for personal memories.
   */
  persona_id?: number | null;
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * server (the /memories panel: the workspace's memories) or personal (the /personal memories panel: the actor's own, or identity_id's).
   */
  scope: "personal" | "server";
  /**
   * import only: merge (add the entries, skipping any whose text and tags equal a stored memory of this owner and exact lineage, or an earlier entry; whitespace runs and tag order ignored) or replace (delete every memory of this owner and exact lineage, then add every entry). Refused with limit-reached, nothing changed, when the owner's memories would then exceed the cap.
   */
  strategy?: "merge" | "replace";
  /**
   * Tags as the panel took them: raw comma-separated text or a list. Split on commas, trimmed, quotes stripped; empty and over-32-character tags dropped; duplicates removed; at most 5 kept. A tag starting with `#` names a channel. On an edit, null keeps the stored tags. Not read by import (each entry has its own).
   */
  tags?: string | string[] | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * The person using the panel.
 */
export interface Actor {
  /**
   * Their Discord user id. Personal memories are theirs (unless identity_id is set), and server memories they add are recorded as taught by them.
   */
  id: string;
  /**
   * True when they have Manage Server in this guild, and always in a DM. Managers see and change every server memory and may teach when member teaching is off; others see and change only the server memories they taught.
   */
  is_manager?: boolean;
}
/**
 * One memory of an import (TomoriBot's data import: a memory item of an export file).
 */
export interface ImportEntry {
  /**
   * The memory's text: trimmed, never rewritten, at most MAX_MEMORY_LENGTH UTF-16 units (a longer or blank one refuses the whole import).
   */
  content: string;
  /**
   * This memory's tags, parsed as the panels parse them (split on commas, trimmed, quotes stripped, empty and over-32-character tags dropped, duplicates removed, at most 5 kept; `#name` is a channel); null for none.
   */
  tags?: string | string[] | null;
}
/**
 * `memory.reinforce`: the memories a reply used.
 *
 * Reinforcing marks a memory as recently used (last_reinforced_at now, reinforcement_count
 * plus one), which keeps it from being evicted as dormant. It changes nothing a bot shows.
 */
export interface ReinforceMemories {
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * The lineage of the persona that replied. Server memories count only when they belong to this workspace and lineage; personal ones when they are of this lineage or global (lineage 0).
   */
  lineage_id: number;
  /**
   * The memories the reply used: those the model was given for it (at most 500). Ids that do not qualify, or no longer exist, are ignored.
   *
   * @maxItems 500
   */
  memories?: MemoryRef[];
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * One memory a reply used.
 */
export interface MemoryRef {
  /**
   * Its server_memory_id or personal_memory_id.
   */
  memory_id: number;
  /**
   * server or personal: which table memory_id is from.
   */
  scope: "personal" | "server";
}
/**
 * A memory was removed: from a panel, or by the model (a blank update_long_term_memory).
 */
export interface MemoryRemoved {
  /**
   * The command that caused the event.
   */
  command_id: string;
  /**
   * Its text.
   */
  content: string;
  /**
   * The event's id, also its Nats-Msg-Id header: derived from the command id, so a retried command re-emits the same ids; de-duplicate redeliveries by it.
   */
  event_id: string;
  /**
   * Its lineage.
   */
  lineage_id: number;
  /**
   * The removed memory's id.
   */
  memory_id: number;
  /**
   * When the worker processed the command (RFC 3339, UTC).
   */
  occurred_at: string;
  /**
   * Whose memory it was: the workspace id (server) or the user's id (personal).
   */
  owner_id: string;
  /**
   * server or personal: the memory's table.
   */
  scope: "personal" | "server";
}
/**
 * A memory was written: a model save, a panel add or edit, or a bio seed.
 */
export interface MemorySaved {
  /**
   * The command that caused the event.
   */
  command_id: string;
  /**
   * Its text as stored.
   */
  content: string;
  /**
   * The event's id, also its Nats-Msg-Id header: derived from the command id, so a retried command re-emits the same ids; de-duplicate redeliveries by it.
   */
  event_id: string;
  /**
   * The memory this save forgot to make room; null when none was.
   */
  evicted?: EvictedMemory | null;
  /**
   * The memory's lineage (0: a user's global memory, such as a bio seed).
   */
  lineage_id: number;
  /**
   * True when a person wrote or last edited it: such a memory is never evicted.
   */
  manually_written: boolean;
  /**
   * The memory's id (server_memory_id or personal_memory_id).
   */
  memory_id: number;
  /**
   * For a model save, the same notice plan as the result's; null for panel writes and seeds, which show no notice.
   */
  notice?: NoticePlan | null;
  /**
   * When the worker processed the command (RFC 3339, UTC).
   */
  occurred_at: string;
  /**
   * Whose memory it is: the workspace id for a server memory, the user's Discord id (or a proxy identity's synthetic id) for a personal one.
   */
  owner_id: string;
  /**
   * server or personal: the memory's table.
   */
  scope: "personal" | "server";
  /**
   * Where it came from, unchanged by later edits: model (a tool call), manual (a panel), import, legacy (a row from before the worker), bio_seed.
   */
  source: "bio_seed" | "import" | "legacy" | "manual" | "model";
  /**
   * The workspace the command came from.
   */
  workspace_id: string;
}
/**
 * The memory a save forgot to make room.
 */
export interface EvictedMemory {
  /**
   * Its text.
   */
  content: string;
  /**
   * The forgotten memory's id (it no longer exists).
   */
  memory_id: number;
}
/**
 * `memory.seed_bio`: the one-time bio snapshot of a new proxy identity.
 *
 * The bio becomes one global (lineage 0) personal memory of the identity, source bio_seed,
 * at most once per identity whatever the command id; it is skipped for an identity that is
 * not new, a blank bio, a host that protects the identity, or a full lineage 0.
 */
export interface SeedBio {
  /**
   * The identity's profile text as the proxy reports it; whitespace is collapsed and it is cut to MESSAGE_PROXY_BIO_SEED_MAX_CHARS (default 1000 UTF-16 units). null or blank: skipped.
   */
  bio?: string | null;
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * The identity's synthetic id (`pk:<uuid>` for PluralKit, `pb:<digits>` for PluralBuddy, `<prefix>i:<length>:<instance>:<key>` for a custom instance). The bot must have written its users row and its host links first: an identity with no resolvable host is skipped as protected.
   */
  identity_user_id: string;
  /**
   * True only when the bot has just created this identity's row; false is answered skipped.
   */
  is_new_identity: boolean;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * `memory.shadow`: what a bot that still writes itself did, after asking the worker for
 * the dry run of the same command (shadow mode, docs/design.md section 3.6). The worker pairs
 * it with its dry run and records whether the two agreed (`memoryctl shadow report`).
 */
export interface ShadowReport {
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * The bot's own write threw: its message (the pair is counted as differing).
   */
  error?: string | null;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * The kind of the shadowed command.
   */
  kind: "create" | "manual" | "reinforce" | "seed_bio" | "update";
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * What the bot's own write gave, in the shadowed kind's result shape (`success`, `message` or `error`, `data` with its `status`, `reason`, ids and the rest, `notice`): every field given is compared with the dry run's; a field left out is not. null when the bot's own write threw (see `error`).
   */
  result?: {} | null;
  /**
   * The command_id of the dry run this reports on (the report's own command_id is a fresh one).
   */
  shadowed_id: string;
  /**
   * True when the dry run's answer did not come within the bot's timeout: the pair is counted as timed out, never compared.
   */
  timed_out?: boolean;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * `memory.update`: the model's `update_long_term_memory` tool call. It replaces the text of
 * the memory the model names by the id it was shown (`ID:N`), or deletes that memory when
 * memory_content is blank. Answered in TomoriBot's words and statuses (docs/design.md,
 * section 8.4).
 */
export interface UpdateMemory {
  /**
   * The bot's own Discord user id: a target_user that resolves to it is refused (memory_update_failed_invalid_target).
   */
  bot_user_id: string;
  /**
   * Where the tool call happened: where the notice goes, whether the thought log gets a copy, and (is_dm) which membership rule a target_user is held to.
   */
  channel: Channel;
  /**
   * The command's identity, unique per logical command (a UUID is a good choice). The worker applies a command_id at most once and answers every repeat with the stored result, so a retry must reuse it. Also send it as the Nats-Msg-Id header so JetStream drops a repeat inside its duplicate window.
   */
  command_id: string;
  /**
   * True: decide without effect (shadow mode, docs/design.md section 3.6). The worker runs the command as it would (the owner's lock, the same context, the same decision) and answers the result it would have given, but writes no memory, publishes no event and stores no result: the command_id is not used up, and a later real command with it is applied as new. The answer is kept for the shadow report (memory.shadow) instead. A memory id the command would have created is the one the table's sequence would give next, a guess a concurrent write can beat. Bad input and refusals are answered exactly as for a real command.
   */
  dry_run?: boolean;
  /**
   * When the bot issued the command (RFC 3339), set by the bot. Informational: the worker processes a workspace's commands in publish order, never by this time.
   */
  issued_at: string;
  /**
   * The guild's members the target_user may be: the bot's member search for the target_user text, and every participant who is a member of the guild now (discord.js `guild.members.cache.get(id)`, else `guild.members.fetch(id)`). In a guild a target_user whose id is not among them (a participant who left, say) is refused as not in this server (memory_update_failed_invalid_scope), as TomoriBot refuses a target it cannot fetch from the guild; a proxy identity is exempt. Not read in a DM or without a target_user, so it may be left empty there.
   *
   * @maxItems 256
   */
  member_matches?: MemberMatch[];
  /**
   * The people of the conversation the model may name (what the bot listed to the model), checked first when resolving target_user.
   *
   * @maxItems 256
   */
  participants?: Participant[];
  /**
   * The speaking persona. A server memory is found only within its lineage, a personal one within its lineage or the user's global memories (lineage 0). id 0 is refused (memory_update_failed_internal_error, "Missing server context").
   */
  persona: Persona;
  /**
   * Where the worker publishes the result: a NATS subject under one of the operator's REPLY_SUBJECT_PREFIXES (default `_INBOX.`), normally the bot's own reply inbox, subscribed before the publish. null: the command is applied and nobody is answered. A subject outside the prefixes is never published to: the command is dead-lettered unapplied (see the result lookup).
   */
  reply_to?: string | null;
  /**
   * The model's arguments exactly as it gave them, decoded from the provider's argument string into a JSON object: memory_id (a number: the N of `ID:N`), memory_content (the full new text; blank deletes the memory) and, for a personal memory, target_user (legacy names target_user_nickname and target_user_discord_id are read too). Not validated on decoding: bad arguments are answered with memory_update_failed_invalid_args naming the parameter.
   */
  tool_args?: unknown;
  /**
   * Who caused the turn. In a DM the target_user must be them, or the update is refused (memory_update_failed_invalid_scope).
   */
  triggerer?: Triggerer | null;
  /**
   * The Discord guild id, or the user's id in a direct message: whose server memories, settings and directory rows the command uses. It must equal the last token of the subject the command is published to (memory.<kind>.<workspace token>), or the command is refused as invalid.
   */
  workspace_id: string;
}
/**
 * A memory's text was replaced by the model (the update_long_term_memory tool): the same
 * memory, its new text. Its tags, source and protection are unchanged.
 */
export interface MemoryUpdated {
  /**
   * The command that caused the event.
   */
  command_id: string;
  /**
   * Its new text as stored.
   */
  content: string;
  /**
   * The text it had before.
   */
  content_before: string;
  /**
   * The event's id, also its Nats-Msg-Id header: derived from the command id, so a retried command re-emits the same ids; de-duplicate redeliveries by it.
   */
  event_id: string;
  /**
   * The memory's lineage (0: a user's global memory).
   */
  lineage_id: number;
  /**
   * Unchanged by a model's edit: true when a person wrote or last edited it, which keeps it from being evicted.
   */
  manually_written: boolean;
  /**
   * The memory's id (server_memory_id or personal_memory_id).
   */
  memory_id: number;
  /**
   * The same notice plan as the result's.
   */
  notice?: NoticePlan | null;
  /**
   * When the worker processed the command (RFC 3339, UTC).
   */
  occurred_at: string;
  /**
   * Whose memory it is: the workspace id for a server memory, the user's Discord id (or a proxy identity's synthetic id) for a personal one.
   */
  owner_id: string;
  /**
   * server or personal: the memory's table.
   */
  scope: "personal" | "server";
  /**
   * Where the memory came from, unchanged by the edit: model, manual, import, legacy, bio_seed.
   */
  source: "bio_seed" | "import" | "legacy" | "manual" | "model";
  /**
   * The workspace the command came from.
   */
  workspace_id: string;
}
/**
 * Exactly these two fields: no content, no ids. The event id rides in the Nats-Msg-Id
 * header and is opaque: it leads back to no command, workspace or content.
 */
export interface MemoryEvictionMetric {
  /**
   * The dormancy period it was evicted under.
   */
  decay_days: number;
  /**
   * server or personal: which kind of memory was evicted.
   */
  scope: "personal" | "server";
}
/**
 * The answer to a command of any kind that could not be decoded or whose envelope is
 * invalid; it is dead-lettered with reason invalid_command, never applied.
 * A create's reply of this kind also fits the create result.
 */
export interface InvalidCommandResult {
  /**
   * The command's id as far as it could be read (empty when it could not).
   */
  command_id: string;
  /**
   * The status memory_command_invalid and the reason.
   */
  data: InvalidData;
  /**
   * What was wrong with the command.
   */
  error: string;
  /**
   * Always false.
   */
  success: false;
}
/**
 * `data` of the answer to a command that could not be read.
 */
export interface InvalidData {
  /**
   * What was wrong with the command, naming the field (a bug in the bot, not the user's doing).
   */
  reason: string;
  /**
   * Always memory_command_invalid.
   */
  status: "memory_command_invalid";
}
/**
 * Result of memory.manual.
 */
export interface ManualResult {
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and what it needs.
   */
  data: ManualData;
  /**
   * The refusal or failure text (the same as data.reason); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the change made stale (tomori_state for server memories, user for personal ones): drop them before showing the panel again. Empty when nothing changed, and always for reinforcement.
   */
  invalidated?: CacheKey[];
  /**
   * True when done, and for a skipped seed (a normal outcome); false for a refusal or a failure.
   */
  success: boolean;
}
/**
 * `data` of a panel command's result.
 */
export interface ManualData {
  /**
   * batch-limit-reached, and an import's limit-reached: how many more memories fit under the cap.
   */
  available?: number;
  /**
   * reinforced: how many memories were marked as used.
   */
  count?: number;
  /**
   * The memory added (one row), updated, kept unchanged, removed or seeded.
   */
  memory_id?: number;
  /**
   * added: the ids of every memory added, in order (one for an add); imported: the ids of every memory the import added, in entry order (empty when it added none).
   */
  memory_ids?: number[];
  /**
   * Why it was refused, skipped or failed, in words for the person using the panel; null when it was done.
   */
  reason?: string | null;
  /**
   * imported: how many memories a replace deleted (0 for a merge).
   */
  removed_count?: number;
  /**
   * batch-limit-reached, and an import's limit-reached: how many new memories the batch or import held.
   */
  requested?: number;
  /**
   * added: how many entries of the batch were skipped as already saved or repeated; imported: how many entries a merge skipped as equal to a stored memory or an earlier entry.
   */
  skipped_duplicates?: number;
  /**
   * added, updated, unchanged (same text and tags, row already protected), removed, imported (with memory_ids, removed_count, skipped_duplicates), or a refusal: privacy-blocked, host-protected, empty-content, content-too-long, limit-reached, batch-limit-reached, all-duplicates, not-found, blacklisted, teaching-disabled, managers-only (an import of server memories by someone who is not a manager); failed when the worker gave up.
   */
  status:
    | "added"
    | "all-duplicates"
    | "batch-limit-reached"
    | "blacklisted"
    | "content-too-long"
    | "empty-content"
    | "failed"
    | "host-protected"
    | "imported"
    | "limit-reached"
    | "managers-only"
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
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and what it needs.
   */
  data: ReinforceData;
  /**
   * The refusal or failure text (the same as data.reason); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the change made stale (tomori_state for server memories, user for personal ones): drop them before showing the panel again. Empty when nothing changed, and always for reinforcement.
   */
  invalidated?: CacheKey[];
  /**
   * True when done, and for a skipped seed (a normal outcome); false for a refusal or a failure.
   */
  success: boolean;
}
/**
 * `data` of a reinforcement's result.
 */
export interface ReinforceData {
  /**
   * batch-limit-reached, and an import's limit-reached: how many more memories fit under the cap.
   */
  available?: number;
  /**
   * reinforced: how many memories were marked as used.
   */
  count?: number;
  /**
   * The memory added (one row), updated, kept unchanged, removed or seeded.
   */
  memory_id?: number;
  /**
   * added: the ids of every memory added, in order (one for an add); imported: the ids of every memory the import added, in entry order (empty when it added none).
   */
  memory_ids?: number[];
  /**
   * Why it was refused, skipped or failed, in words for the person using the panel; null when it was done.
   */
  reason?: string | null;
  /**
   * imported: how many memories a replace deleted (0 for a merge).
   */
  removed_count?: number;
  /**
   * batch-limit-reached, and an import's limit-reached: how many new memories the batch or import held.
   */
  requested?: number;
  /**
   * added: how many entries of the batch were skipped as already saved or repeated; imported: how many entries a merge skipped as equal to a stored memory or an earlier entry.
   */
  skipped_duplicates?: number;
  /**
   * reinforced (with count), or failed when the worker gave up.
   */
  status: "failed" | "reinforced";
}
/**
 * Result of memory.seed_bio.
 */
export interface SeedBioResult {
  /**
   * The command this answers.
   */
  command_id: string;
  /**
   * The status and what it needs.
   */
  data: SeedBioData;
  /**
   * The refusal or failure text (the same as data.reason); null on success.
   */
  error?: string | null;
  /**
   * The bot cache entries the change made stale (tomori_state for server memories, user for personal ones): drop them before showing the panel again. Empty when nothing changed, and always for reinforcement.
   */
  invalidated?: CacheKey[];
  /**
   * True when done, and for a skipped seed (a normal outcome); false for a refusal or a failure.
   */
  success: boolean;
}
/**
 * `data` of a bio seed's result.
 */
export interface SeedBioData {
  /**
   * batch-limit-reached, and an import's limit-reached: how many more memories fit under the cap.
   */
  available?: number;
  /**
   * reinforced: how many memories were marked as used.
   */
  count?: number;
  /**
   * The memory added (one row), updated, kept unchanged, removed or seeded.
   */
  memory_id?: number;
  /**
   * added: the ids of every memory added, in order (one for an add); imported: the ids of every memory the import added, in entry order (empty when it added none).
   */
  memory_ids?: number[];
  /**
   * Why it was refused, skipped or failed, in words for the person using the panel; null when it was done.
   */
  reason?: string | null;
  /**
   * imported: how many memories a replace deleted (0 for a merge).
   */
  removed_count?: number;
  /**
   * batch-limit-reached, and an import's limit-reached: how many new memories the batch or import held.
   */
  requested?: number;
  /**
   * added: how many entries of the batch were skipped as already saved or repeated; imported: how many entries a merge skipped as equal to a stored memory or an earlier entry.
   */
  skipped_duplicates?: number;
  /**
   * seeded (with memory_id), skipped (reason says why: not a new identity, already seeded, blank bio, a protecting host, a full lineage 0), or failed when the worker gave up.
   */
  status: "failed" | "seeded" | "skipped";
}
/**
 * Result of memory.shadow: how the report was paired with its dry run.
 */
export interface ShadowResult {
  /**
   * The report this answers.
   */
  command_id: string;
  /**
   * The outcome and the differences.
   */
  data: ShadowData;
  /**
   * True once recorded.
   */
  success: boolean;
}
/**
 * `data` of a shadow report's result.
 */
export interface ShadowData {
  /**
   * The fields that differed, with both values (differed and concurrent); a credential is shown as its kind only, and a long value as its size.
   */
  differences?: ShadowDifference[];
  /**
   * How the pair came out (null when failed): agreed (every field the bot gave is the dry run's), differed (a real disagreement: see differences), concurrent (they differ, and an insert of the same owner and scope came between the dry run and the bot's own write: not comparable), timed_out (the bot had no dry-run answer in time), unpaired (no dry run of this command_id by this bot and workspace reached the worker), nothing_compared (the bot's result held no field to compare: `{}`, `{"data": {}}`; never an agreement).
   */
  outcome?: ("agreed" | "concurrent" | "differed" | "nothing_compared" | "timed_out" | "unpaired") | null;
  /**
   * recorded; failed when the worker gave up on the report (it is not recorded).
   */
  status: "failed" | "recorded";
}
/**
 * One field on which a bot's own write and the worker's dry run disagreed.
 */
export interface ShadowDifference {
  /**
   * The bot's value.
   */
  bot?: unknown;
  /**
   * The field's path in the result, dotted (`data.status`, `data.reason`, `notice.footer`).
   */
  field: string;
  /**
   * The dry run's value (null: absent from its result).
   */
  worker?: unknown;
}
/**
 * Every command kind (contracts/registry.py), by its subject token memory.<kind>.<workspace>: the
 * command a bot sends and the reply it gets (contracts/asyncapi.json).
 */
export interface CommandKinds {
  create: { command: CreateMemory; reply: CommandResult };
  manual: { command: ManualMemory; reply: ManualResult | InvalidCommandResult };
  reinforce: { command: ReinforceMemories; reply: ReinforceResult | InvalidCommandResult };
  seed_bio: { command: SeedBio; reply: SeedBioResult | InvalidCommandResult };
  shadow: { command: ShadowReport; reply: ShadowResult | InvalidCommandResult };
  update: { command: UpdateMemory; reply: UpdateResult | InvalidCommandResult };
}
