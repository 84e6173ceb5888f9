// The part of a TomoriBot-style bot that the example modules use, declared (not implemented) so
// that `tsc --strict` checks the examples against it. Written for this guide: each name says which
// fact of the bot it stands for (docs/tomoribot.md maps them to TomoriBot's own code); nothing
// here is TomoriBot's code, and a bot's real types have many more members.
import type { MemoryClient } from "@memory-worker/client";

/** A nats.js v3 connection, as `connect()` of `@nats-io/transport-node` returns it. */
export type BotNatsConnection = Parameters<typeof MemoryClient.start>[0];

// --- discord.js, reduced to what the examples read ------------------------------------------

export interface DiscordUser {
  id: string;
  username: string;
  globalName: string | null;
  bot: boolean;
}

export interface GuildMember {
  id: string;
  /** Guild nickname, else global name, else username. */
  displayName: string;
  nickname: string | null;
  user: DiscordUser;
}

export interface Guild {
  id: string;
  members: {
    /** Discord's member search (prefix match on username and nickname). */
    search(options: { query: string; limit: number }): Promise<ReadonlyMap<string, GuildMember>>;
    fetch(userId: string): Promise<GuildMember>;
  };
}

export interface TextChannel {
  id: string;
  url: string;
  /** The guild, or null in a DM. */
  guild: Guild | null;
  isDMBased(): boolean;
  isThread(): boolean;
  /** For a thread, the channel it belongs to. */
  parentId: string | null;
  isPrivateThread(): boolean;
}

export interface Message {
  id: string;
  url: string;
  author: DiscordUser & { displayName: string };
}

// --- the bot's own state and helpers ----------------------------------------------------------

/** The active persona and the workspace's settings, as the bot's state cache holds them. */
export interface TomoriState {
  /** The bot's internal server serial (not the Discord id). */
  server_id: number;
  persona_id: number;
  persona_lineage_id: number;
  persona_nickname: string;
  config: {
    /** The workspace's private channel list (server_channel_scope_configs.private_channel_ids). */
    private_channel_ids: string[];
  };
}

/** Someone the bot listed to the model as part of the conversation. */
export interface ConversationUserReference {
  /** A Discord id, a Matrix bridge id or a message-proxy identity's synthetic id. */
  targetId: string;
  displayLabel: string;
  aliases: string[];
}

/** How this turn retrieves memories (what the bot resolved before calling the model). */
export interface TurnRetrieval {
  ragEnabled: boolean;
  embeddingModel: string | null;
  hasEmbeddingCredentials: boolean;
}

/** What a tool's `execute` receives. */
export interface ToolContext {
  channel: TextChannel;
  client: { user: DiscordUser | null };
  /** The message that triggered the turn, when there is one. */
  message?: Message;
  /** The triggering user's id when there is no message (a slash command). */
  userId?: string;
  tomoriState: TomoriState;
  /** The name the persona speaks under in this turn (webhook persona), if any. */
  personaUsername?: string;
  /** The people of the conversation, as listed to the model this turn. */
  conversationUsers: ConversationUserReference[];
  retrieval: TurnRetrieval;
  locale: string;
}

/** What a tool hands back to the model. */
export interface ToolResult {
  success: boolean;
  data?: unknown;
  error?: string;
  message?: string;
}

/** Who triggered the turn, impersonation and proxies taken into account. */
export declare function resolveTriggererDiscordId(context: ToolContext): string | undefined;
/** True for a Matrix bridge user's id. */
export declare function isBridgeUserId(id: string): boolean;
/** True for a message-proxy identity's synthetic id (PluralKit, PluralBuddy). */
export declare function isMessageProxyIdentityUserId(id: string): boolean;
/** True when every member of the guild can read the channel: @everyone has View Channel and
 *  nothing denies it (for a thread, on its parent). */
export declare function everyoneCanView(channel: TextChannel): boolean;
/** Users whose saved nickname or persona nickname (for this lineage) normalizes to `name`. */
export declare function findUserIdsByStoredNickname(name: string, lineageId: number): Promise<string[]>;

// --- the bot's database reads that its caches wrap ---------------------------------------------

export interface UserCacheEntry {
  userDiscId: string;
  privacyLevel: number;
  personalMemories: string[];
}

export declare function loadTomoriState(serverDiscId: string): Promise<TomoriState | null>;
export declare function loadUserCacheEntry(userDiscId: string): Promise<UserCacheEntry>;
/** The bot's existing in-process caches, for code not yet moved onto the cache node. */
export declare function invalidateTomoriStateCache(serverDiscId: string): void;
export declare function invalidateUserCache(userDiscId: string): void;
export declare function clearAllStateCaches(): void;

// --- the bot's embed helpers ------------------------------------------------------------------

export interface NoticeEmbed {
  title: string;
  fields?: Array<{ name: string; value: string }>;
  footer?: string;
  /** Rendered as a "jump to source" link. */
  sourceUrl?: string | null;
}

/** A "show more" button: its click answers ephemerally with the text, or with a file. */
export type ExpandButton =
  | { label: string; text: string }
  | { label: string; file: { name: string; content: string } };

export interface SendOptions {
  expand?: ExpandButton;
  /** Post as the persona (webhook) rather than as the bot. */
  asPersona?: { username: string };
}

export declare function sendNoticeEmbed(channelId: string, embed: NoticeEmbed, options?: SendOptions): Promise<void>;
/** The answer to a panel interaction, shown only to the person who used it. */
export declare function replyEphemeral(text: string): Promise<void>;

export declare const log: {
  info(message: string): void;
  warn(message: string, error?: unknown): void;
  error(message: string, error?: unknown): void;
};
