// @memory-worker/client: the bot side of the memory worker for TypeScript bots.
export { MemoryClient, isInvalidCommand, newCommandId, BATCH_MAX_COMMANDS } from "./memory_client.js";
export { SHADOW_TIMEOUT_MS } from "./shadowing.js";
export { lookupOutcome } from "./lookup.js";
export { CommandDeadLettered, ResultTimeout } from "./errors.js";
export { CacheNode, consumerConfig, consumerName, parseInvalidation } from "./cache_node.js";
export { COMMANDS_STREAM, DLQ_STREAM, EVENTS_STREAM, INVALIDATE_FILTER, commandSubject, decodeToken, encodeToken, evictedSubject, invalidateSubject, isAckSubject, removedSubject, resultSubject, savedSubject, updatedSubject, } from "./subjects.js";
