// @memory-worker/client: the bot side of the memory worker for TypeScript bots.
export { MemoryClient, isInvalidCommand, newCommandId, BATCH_MAX_COMMANDS } from "./memory_client.js";
export type {
  CommandInput, CommandInputOf, CreateMemoryInput, ManualMemoryInput, MemoryClientOptions, ReinforceMemoriesInput, SeedBioInput,
  ReplyOf, SendOptions, ShadowedCommands, ShadowReportInput, UpdateMemoryInput,
} from "./memory_client.js";
export { SHADOW_TIMEOUT_MS } from "./shadowing.js";
export type { ShadowedKind, ShadowedOptions } from "./shadowing.js";
export { lookupOutcome } from "./lookup.js";
export type { LookupOptions } from "./lookup.js";
export { CommandDeadLettered, ResultTimeout } from "./errors.js";
export { CacheNode, consumerConfig, consumerName, parseInvalidation } from "./cache_node.js";
export type { CacheNodeOptions, CacheStats, CloseOptions, Invalidation } from "./cache_node.js";
export {
  COMMANDS_STREAM, DLQ_STREAM, EVENTS_STREAM, INVALIDATE_FILTER, commandSubject, decodeToken, encodeToken,
  evictedSubject, invalidateSubject, isAckSubject, removedSubject, resultSubject, savedSubject, updatedSubject,
} from "./subjects.js";
export type { CacheName, CommandKind, Scope } from "./subjects.js";
export type {
  CacheKey, CommandKinds, CommandOutcome, CommandResult, CreateMemory, DeadLetterInfo, InvalidCommandResult, ManualMemory, ManualResult, NoticePlan,
  ReinforceMemories, ReinforceResult, SeedBio, SeedBioResult, ShadowData, ShadowDifference, ShadowReport, ShadowResult,
  UpdateMemory, UpdateResult,
} from "@memory-worker/contracts";
