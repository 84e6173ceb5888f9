// TomoriBot's own modules, as the example imports them: declared here (no implementation) so that
// `tsc --strict` checks the example against TomoriBot's real module paths, type names, fields and
// signatures, together with the real discord.js 14 package. Written from reading TomoriBot's source
// (Bredrumb/TomoriBot; where Bredrumb's stored copy predates the persona-naming era, the
// palinalif/TomoriBot snapshot 6f5e0070 of it), reduced to the members the example uses: a real
// module has many more. Nothing here is TomoriBot's code.
//
// Two declarations are changes the guide asks of TomoriBot, and say so where they stand:
// `stripNamingAffixes` (module-private in targetResolver.ts today: export it) and the
// `actorDiscId` (and, for /personal memories, `workspaceId`) the panels' operations are given.

declare module "@/types/personaNaming" {
  // src/types/personaNaming.ts (palinalif@6f5e0070)
  export type AddressingStyle = "masculine" | "feminine" | "neutral";
  export interface PersonaNamingConfig {
    prefixes: Partial<Record<AddressingStyle, string>>;
    suffixes: Partial<Record<AddressingStyle, string>>;
    addressTerms: Partial<Record<AddressingStyle, string>>;
  }
}

declare module "@/constants/toolNotices" {
  // The notice keys a server can hide or shrink; the memory tools' key is "memory_update".
  export type ToolNoticeKey = "memory_update" | "task_update";
}

declare module "@/types/db/schema" {
  // src/types/db/schema.ts (Bredrumb@a627bb59); the rows are zod-inferred types there.
  import type { ToolNoticeKey } from "@/constants/toolNotices";
  import type { PersonaNamingConfig } from "@/types/personaNaming";

  export enum PrivacyLevel {
    MINIMAL = 0,
    PARTIAL = 1,
    FULL = 2,
  }

  export interface UserRow {
    user_id?: number;
    user_disc_id: string;
    user_nickname: string;
    privacy_level: PrivacyLevel;
  }

  export interface TomoriRow {
    /** Optional in TomoriBot's schema: the tools refuse a state without it. */
    persona_id?: number;
    /** The internal servers.server_id, not the Discord id. */
    server_id: number;
    /** Defaults to 0, which is reserved for a user's global memories. */
    persona_lineage_id: number;
    persona_nickname: string;
    is_alter: boolean;
  }

  /** The assembled view over the split server config tables. */
  export interface AssembledServerConfig {
    self_teaching_enabled: boolean;
    personal_memories_enabled: boolean;
    server_memteaching_enabled: boolean;
    memory_tagging_enabled: boolean;
    channel_memory_enabled: boolean;
    tool_notice_hidden_keys: ToolNoticeKey[];
    tool_notice_verbosity: "minimal" | "verbose";
    thought_log_channel_disc_id?: string | null;
    private_channel_ids: string[];
    embedding_model_id?: number | null;
  }

  export type TomoriState = TomoriRow & {
    config: AssembledServerConfig;
    server_memories: string[];
    /** The persona's naming settings (persona_naming_configs), as targetResolver.ts@a950f54c reads them. */
    naming_config?: PersonaNamingConfig;
  };

  export interface ServerMemoryRow {
    server_memory_id?: number;
    server_id: number;
    persona_id?: number | null;
    persona_lineage_id: number;
    /** Who taught it; null once that user is deleted. */
    user_id: number | null;
    content: string;
    tags: string[];
  }

  export interface PersonalMemoryRow {
    personal_memory_id?: number;
    user_id: number;
    persona_lineage_id: number;
    content: string;
    tags: string[];
  }

  export interface EmbeddingModelRow {
    embedding_model_id?: number;
    provider: string;
    codename: string;
    model_family: string;
  }

  /** What a Minimal notice confirms, so context rebuilding can restore its body (migration 096). */
  export interface MinimalNoticeRef {
    kind: "server_memory" | "personal_memory" | "task";
    id: number;
  }
}

declare module "@/types/misc/context" {
  // src/types/misc/context.ts (Bredrumb@034f1928; participantTargetIndex from 9ddf8393 on)
  import type { ParticipantTargetIndex } from "@/utils/text/participants/targetIndex";

  export interface ConversationUserReference {
    targetId: string;
    displayLabel: string;
    aliases: string[];
    mentionable: boolean;
  }

  export enum ContextItemTag {
    KNOWLEDGE_SERVER_MEMORIES = "knowledge_server_memories",
    KNOWLEDGE_USERS_IN_CONVERSATION = "knowledge_users_in_conversation",
  }

  export type ContextPart = { type: "text"; text: string };

  export type StructuredContextItem = {
    role: "system" | "user" | "model";
    parts: ContextPart[];
    metadataTag?: ContextItemTag;
    conversationUsers?: ConversationUserReference[];
    participantTargetIndex?: ParticipantTargetIndex;
  };
}

declare module "@/types/tool/interfaces" {
  // src/types/tool/interfaces.ts (Bredrumb@034f1928)
  import type {
    AnyThreadChannel,
    BaseGuildTextChannel,
    BaseGuildVoiceChannel,
    Client,
    DMChannel,
    Message,
    NewsChannel,
    TextChannel,
    Webhook,
  } from "discord.js";
  import type { TomoriState } from "@/types/db/schema";
  import type { StructuredContextItem } from "@/types/misc/context";

  export interface ToolContext {
    channel: BaseGuildTextChannel | BaseGuildVoiceChannel | DMChannel | NewsChannel | TextChannel | AnyThreadChannel;
    client: Client;
    message?: Message;
    tomoriState: TomoriState;
    locale: string;
    provider: string;
    userId?: string;
    internalUserId?: number;
    guildId?: string;
    webhook?: Webhook;
    personaUsername?: string;
    personaAvatarUrl?: string;
    contextItems?: StructuredContextItem[];
    abortSignal?: AbortSignal;
  }

  export interface ToolResult {
    success: boolean;
    data?: unknown;
    error?: string;
    message?: string;
    endTurn?: boolean;
  }

  export type ToolCategory = "discord" | "search" | "memory" | "utility" | "mcp";
}

declare module "@/types/discord/embed" {
  // src/types/discord/embed.ts (Bredrumb@18a50b5e)
  import type { ColorResolvable } from "discord.js";

  export interface StandardEmbedOptions {
    titleKey: string;
    titleVars?: Record<string, string | number | boolean>;
    descriptionKey?: string;
    description?: string;
    descriptionVars?: Record<string, string | number | boolean>;
    color?: ColorResolvable;
    footerKey?: string;
    footerVars?: Record<string, string | number | boolean>;
    configHint?: boolean;
    minimal?: boolean;
  }
}

declare module "@/utils/misc/logger" {
  // src/utils/misc/logger.ts: the notice colours (values omitted: the example only names them).
  export enum ColorCode {
    INFO,
    SUCCESS,
    WARN,
    ERROR,
    MEMORY_UPDATE,
  }
  export const log: {
    info(message: string, ...context: unknown[]): void;
    warn(message: string, ...context: unknown[]): void;
    error(message: string, ...context: unknown[]): void;
  };
}

declare module "@/utils/discord/expandableEmbedNotice" {
  // src/utils/discord/expandableEmbedNotice.ts (Bredrumb@54317ce5)
  import type { MinimalNoticeRef } from "@/types/db/schema";
  import type { StandardEmbedOptions } from "@/types/discord/embed";
  import type { ToolContext } from "@/types/tool/interfaces";

  export const MEMORY_NOTICE_PREVIEW_LIMIT: number;
  /**
   * Posts the `memory_update` notice where `context.tomoriState.config` routes it (visible or
   * hidden, Minimal or Verbose, the thought-log copy), with the expand button; after a Minimal
   * post it records `ref` (recordMinimalNoticeRef).
   */
  export function sendMemoryEmbedWithExpand(
    context: ToolContext,
    embedOptions: StandardEmbedOptions,
    fullMemoryContent: string,
    ref?: MinimalNoticeRef,
  ): Promise<void>;
}

declare module "@/utils/discord/minimalNoticeBodies" {
  // src/utils/discord/minimalNoticeBodies.ts (Bredrumb@910f1d36)
  import type { MinimalNoticeRef } from "@/types/db/schema";

  export function recordMinimalNoticeRef(messageDiscId: string, ref: MinimalNoticeRef): Promise<void>;
}

declare module "@/tools/functionCalls/memoryNoticeContent" {
  // src/tools/functionCalls/memoryNoticeContent.ts (palinalif@6f5e0070)
  import type { Client } from "discord.js";
  import type { ToolContext } from "@/types/tool/interfaces";

  /** The guild id, or the user's id in a DM; throws `missingIdError` when there is neither. */
  export function memoryServerDiscId(context: Pick<ToolContext, "channel" | "userId">, missingIdError: string): string;
  export function renderMemoryNoticeContent(input: {
    content: string;
    client: Client;
    serverId: string;
    userName: string;
    botNickname: string;
    personalMemoriesEnabled?: boolean;
  }): Promise<{ processedContent: string; preview: { text: string; truncated: boolean } }>;
}

declare module "@/utils/discord/targetResolver" {
  // src/utils/discord/targetResolver.ts (Bredrumb@a950f54c)
  import type { PersonaNamingConfig } from "@/types/personaNaming";
  import type { ToolContext } from "@/types/tool/interfaces";

  export function normalizeUserTargetInput(value: string): string;
  export function resolveTriggererDiscordId(context: ToolContext): string | undefined;
  /**
   * CHANGE ASKED OF TOMORIBOT: module-private today; export it so the member search strips the
   * persona's naming affixes exactly as the resolver does.
   */
  export function stripNamingAffixes(rawInput: string, namingConfig: PersonaNamingConfig | undefined): string | null;
}

declare module "@/utils/text/participants/targetIndex" {
  // src/utils/text/participants/targetIndex.ts (Bredrumb@9ddf8393)
  import type { ConversationUserReference, StructuredContextItem } from "@/types/misc/context";

  export interface ParticipantTargetEntry {
    serializedKey: string;
    displayLabel: string;
    targetId?: string;
    mentionable: boolean;
    inParticipantContext: boolean;
  }
  export interface ParticipantTargetIndex {
    targets: readonly ParticipantTargetEntry[];
  }
  export function collectParticipantTargetIndex(contextItems: readonly StructuredContextItem[]): ParticipantTargetIndex;
  /** The targets in the participant context, each with its `tool_target` aliases only. */
  export function projectConversationUserReferences(index: ParticipantTargetIndex): ConversationUserReference[];
}

declare module "@/utils/text/userNaming" {
  // src/utils/text/userNaming.ts (palinalif@6f5e0070)
  import type { AddressingStyle, PersonaNamingConfig } from "@/types/personaNaming";

  export function resolveEffectiveUserNaming(input: {
    global: {
      userNickname: string | null;
      prefixOverride: string | null;
      suffixOverride: string | null;
      addressingStyle: AddressingStyle | null;
    };
    liveDisplayName: string;
    persona?: PersonaNamingConfig;
    preference?: {
      nickname_override: string | null;
      prefix_override: string | null;
      suffix_override: string | null;
    };
  }): { nickname: string; formattedName: string };
}

declare module "@/utils/bridges" {
  export function isBridgeUserId(value: string): boolean;
}

declare module "@/utils/messageProxy/identityUserId" {
  // src/utils/messageProxy/identityUserId.ts (Bredrumb@60e529b0)
  export function isMessageProxyIdentityUserId(value: string): boolean;
}

declare module "@/utils/messageProxy/bioSeeding" {
  // src/utils/messageProxy/bioSeeding.ts (Bredrumb, messageProxy era)
  import type { getMessageProxyHostProtection } from "@/utils/messageProxy/hostProtection";
  import type { invalidateUserCache } from "@/utils/cache/userCache";

  export type MessageProxyBioSeedArgs = {
    isNewIdentity: boolean;
    identityUserDiscId: string;
    identityUserId: number;
    description: string | null | undefined;
    /** The guild, or null or undefined in a DM. */
    serverDiscId: string | null | undefined;
  };
  /** The function's seams; its default (module-private) is these three functions. */
  export type MessageProxyBioSeedDeps = {
    getHostProtection: typeof getMessageProxyHostProtection;
    addPersonalMemory: (userId: number, personaLineageId: number, content: string) => Promise<unknown>;
    invalidateCache: typeof invalidateUserCache;
  };
  /** TomoriBot's own seed (a direct insert at lineage 0), which the worker's replaces. */
  export function seedMessageProxyIdentityBio(args: MessageProxyBioSeedArgs, deps?: MessageProxyBioSeedDeps): Promise<void>;
}

declare module "@/utils/messageProxy/hostProtection" {
  // src/utils/messageProxy/hostProtection.ts (Bredrumb@60e529b0)
  export type MessageProxyHostProtection =
    | { protected: false; isMessageProxyIdentity: boolean }
    | { protected: true; isMessageProxyIdentity: true; reason: "host_full_privacy" | "host_blacklisted"; hostUserDiscId: string };
  export function getMessageProxyHostProtection(targetUserDiscId: string, serverDiscId: string | null | undefined):
    Promise<MessageProxyHostProtection>;
}

declare module "@/utils/discord/thoughtLogAudience" {
  // src/utils/discord/thoughtLogAudience.ts (Bredrumb@a5c0cef2)
  import type { Channel } from "discord.js";

  export function canMirrorToThoughtLog(source: Channel, destination: Channel, privateChannelIds: readonly string[]): boolean;
}

declare module "@/utils/db/ragAvailability" {
  // src/utils/db/ragAvailability.ts (Bredrumb@684b5e19)
  export function isRagAvailable(): boolean;
}

declare module "@/utils/provider/credentialResolver" {
  // src/utils/provider/credentialResolver.ts
  export type Capability = "text" | "embedding" | "image" | "video" | "vision";
  export interface ResolvedCredentials {
    provider: string;
    apiKey: string;
  }
  export function resolveCapabilityCredentials(
    serverId: number,
    capability: Capability,
    options?: { userId?: number | null },
  ): Promise<ResolvedCredentials>;
  export function getResolvedCapabilityModelId(credentials: ResolvedCredentials, capability: Capability): number | null;
  export class PersonalProviderRequiredError extends Error {}
  export class CredentialUnavailableError extends Error {}
}

declare module "@/utils/memory/memoryId" {
  // src/utils/memory/memoryId.ts: the `ID:N` form the model reads and update_long_term_memory takes.
  export function formatMemoryWithId(memoryId: number, content: string, tags?: string[]): string;
}

declare module "@/utils/db/repositories" {
  // The repository singletons (src/utils/db/repositories/*.ts), with the methods the example calls.
  import type {
    EmbeddingModelRow,
    PersonalMemoryRow,
    ServerMemoryRow,
    TomoriState,
    UserRow,
  } from "@/types/db/schema";
  import type { AddressingStyle } from "@/types/personaNaming";
  import type { ImportResult, MemoryItem } from "@/utils/db/repositories/ImportRepository";

  export const userRepository: {
    loadByDiscordId(userDiscId: string): Promise<UserRow | null>;
    /** Saved nicknames (user_personalization_configs.user_nickname), normalised. */
    findByNormalizedNickname(normalizedNickname: string): Promise<UserRow[]>;
  };
  export const userNamingRepository: {
    /** Persona nicknames of one lineage (user_persona_naming_preferences.nickname_override). */
    findByPersonaNickname(normalizedNickname: string, personaLineageId: number):
      Promise<Array<{ userId: number; userDiscId: string }>>;
    /** Accounts whose stored nickname occurs inside the input, with every naming layer unresolved. */
    findComposedNameCandidates(normalizedInput: string, personaLineageId: number): Promise<Array<{
      userId: number;
      userDiscId: string;
      globalNickname: string | null;
      globalPrefixOverride: string | null;
      globalSuffixOverride: string | null;
      addressingStyle: AddressingStyle | null;
      personaNicknameOverride: string | null;
      personaPrefixOverride: string | null;
      personaSuffixOverride: string | null;
    }>>;
  };
  export const serverMemoryRepository: {
    /** A lineage's server memories; with `taughtByUserId`, only those that user taught. */
    loadServerMemoriesScoped(serverId: number, personaLineageId: number, taughtByUserId?: number): Promise<ServerMemoryRow[]>;
    /** TomoriBot's own delete (vectorize's last step): whether a row was deleted. */
    remove(serverMemoryId: number): Promise<boolean>;
  };
  export const personalMemoryRepository: {
    loadForUserLineage(userId: number, personaLineageId: number, includeGlobal: boolean): Promise<PersonalMemoryRow[]>;
    /** TomoriBot's own insert: the row, or null (invalid content, the limit reached, a failure). */
    add(userId: number, personaLineageId: number, content: string, tags?: string[]): Promise<PersonalMemoryRow | null>;
  };
  /** TomoriBot's own bundle imports (src/utils/db/repositories/ImportRepository.ts), which the worker's replace. */
  export const importRepository: {
    importWorkspaceMemoryBundle(serverDiscId: string, importerUserDiscId: string,
      mappings: ReadonlyArray<{ bucketName: string; personaId: number; memories: MemoryItem[] }>,
      strategy: "merge" | "replace"): Promise<ImportResult>;
    importPersonalMemoryBundle(userDiscId: string,
      mappings: ReadonlyArray<{ bucketName: string; personaLineageId: number; memories: MemoryItem[] }>,
      strategy: "merge" | "replace"): Promise<ImportResult>;
  };
  export const personaRepository: {
    loadAllForServer(serverDiscId: string): Promise<TomoriState[]>;
  };
  export const llmModelRepo: {
    loadEmbeddingModelById(embeddingModelId: number): Promise<EmbeddingModelRow | null>;
  };
}

declare module "@/utils/db/repositories/ImportRepository" {
  // src/utils/db/repositories/ImportRepository.ts: the bundle imports' shapes.
  export interface MemoryItem {
    content: string;
    tags: string[];
  }
  export interface ImportResult {
    success: boolean;
    /** A locale key (commands.data.import.*), with `|`-separated variables. */
    error?: string;
    itemsImported?: {
      memoriesInserted?: number;
      memoriesSkipped?: number;
      memoriesDeleted?: number;
      memoriesCount?: number;
    };
  }
}

declare module "@/utils/cache/tomoriStateCache" {
  // src/utils/cache/tomoriStateCache.ts: keyed by the guild id (the user's id in a DM).
  export function invalidateTomoriStateCache(serverDiscId: string): void;
  export function clearTomoriStateCache(): void;
}

declare module "@/utils/cache/userCache" {
  // src/utils/cache/userCache.ts: keyed by the user's Discord id (or a proxy identity's id).
  import type { UserRow } from "@/types/db/schema";

  export function getCachedUserRow(userDiscId: string): Promise<UserRow | null>;
  export function invalidateUserCache(userDiscId: string): void;
  export function clearUserCache(): void;
}

declare module "@/utils/discord/interactions/memoriesRoutes" {
  // src/utils/discord/interactions/memoriesRoutes.ts (palinalif@6f5e0070): the /memories panel's
  // writes. CHANGE ASKED OF TOMORIBOT: every input also carries `actorDiscId`, the Discord id of
  // the person at the panel (the route passes `interaction.user.id`); the inputs carry only
  // internal ids today.
  import type { ServerMemoryRow } from "@/types/db/schema";

  interface PanelInput {
    serverId: number;
    personaLineageId: number;
    taughtByUserId: number;
    workspaceId: string;
    isBlacklisted: boolean;
    canManage: boolean;
    memteachingEnabled: boolean;
    actorDiscId: string;
  }

  export interface ServerMemoriesOperations {
    add(input: PanelInput & { personaId: number; content: string; tags: string[] }): Promise<
      | { status: "blacklisted" | "teaching-disabled" | "empty-content" | "content-too-long" | "limit-reached" | "write-failed" }
      | { status: "success"; row: ServerMemoryRow }
    >;
    addBatch(input: PanelInput & { personaId: number; contents: string[]; tags: string[] }): Promise<
      | { status: "blacklisted" | "teaching-disabled" | "empty-content" | "content-too-long" | "all-duplicates" | "write-failed" }
      | { status: "batch-limit-reached"; available: number; requested: number }
      | { status: "success"; added: number; skipped: number }
    >;
    edit(input: PanelInput & { memoryId: number; content: string; tags: string[] }): Promise<
      | { status: "blacklisted" | "teaching-disabled" | "empty-content" | "content-too-long" | "not-found" | "write-failed" }
      | { status: "unchanged"; row: ServerMemoryRow }
      | { status: "success"; row: ServerMemoryRow }
    >;
    remove(input: PanelInput & { memoryId: number }): Promise<
      | { status: "teaching-disabled" | "not-found" | "write-failed" }
      | { status: "success"; row: ServerMemoryRow }
    >;
  }
  /** TomoriBot's own operations (direct repository writes), which the worker's replace. */
  export const serverMemoriesOperations: ServerMemoriesOperations;
}

declare module "@/utils/discord/interactions/personalMemoriesRoutes" {
  // src/utils/discord/interactions/personalMemoriesRoutes.ts (Bredrumb@60e529b0): the /personal
  // memories panel's writes. `userId`/`userDiscId` are the managed proxy identity's when the
  // user manages one. CHANGE ASKED OF TOMORIBOT: every input also carries `actorDiscId`
  // (`interaction.user.id`), as for the /memories panel, and `workspaceId` (the panel scope's).
  import type { PersonalMemoryRow } from "@/types/db/schema";

  interface PanelInput {
    userId: number;
    userDiscId: string;
    personaLineageId: number;
    actorDiscId: string;
    workspaceId: string;
  }

  export interface PersonalMemoriesOperations {
    add(input: PanelInput & { content: string; tags: string[] }): Promise<
      | { status: "success"; row: PersonalMemoryRow }
      | { status: "privacy-blocked" | "empty-content" | "content-too-long" | "limit-reached" | "write-failed" }
    >;
    addBatch(input: PanelInput & { contents: string[]; tags: string[] }): Promise<
      | { status: "success"; added: number; skipped: number }
      | { status: "privacy-blocked" | "empty-content" | "content-too-long" | "write-failed" }
      | { status: "batch-limit-reached"; available: number; requested: number }
      | { status: "all-duplicates" }
    >;
    edit(input: PanelInput & { memoryId: number; content: string; tags: string[] }): Promise<
      | { status: "success"; row: PersonalMemoryRow }
      | { status: "unchanged" | "not-found" | "privacy-blocked" | "empty-content" | "content-too-long" | "write-failed" }
    >;
    remove(input: PanelInput & { memoryId: number }): Promise<
      { status: "success"; row: PersonalMemoryRow } | { status: "not-found" | "write-failed" }
    >;
    clearStm(userDiscId: string): Promise<void>;
  }
  /** TomoriBot's own operations (direct repository writes), which the worker's replace. */
  export const personalMemoriesOperations: PersonalMemoriesOperations;
}

declare module "@/utils/discord/interactions/memoriesDocumentOperations" {
  // src/utils/discord/interactions/memoriesDocumentOperations.ts (palinalif@6f5e0070)
  export interface VectorizeMemoryInput {
    serverId: number;
    personaId: number;
    personaLineageId: number;
    memoryId: number;
    /** The internal user_id of the person at the panel. */
    userId: number;
    /** Their Discord id (the panel scope's userDiscId: interaction.user.id). */
    userDiscId: string;
    workspaceId: string;
    configuredEmbeddingModelId: number | null;
    isBlacklisted: boolean;
    canManage: boolean;
    memteachingEnabled: boolean;
    content: string;
    documentName: string;
    channelTags: string[];
  }
  export type VectorizeMemoryResult =
    | { status: "success" | "partial-failure"; documentId: number; documentName: string; chunkCount: number }
    | { status: "blacklisted" | "teaching-disabled" | "rag-disabled" | "not-found" | "write-failed" };
}
