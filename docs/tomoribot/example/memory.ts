// One memory client and one cache node per bot process, started once the NATS connection is up.
// Every module of the bot uses `memory()` and `caches()`; nothing else talks to the worker.
import { CacheNode, MemoryClient } from "@memory-worker/client";
import type { CommandResult } from "@memory-worker/client";
import {
  clearAllStateCaches,
  invalidateTomoriStateCache,
  invalidateUserCache,
  loadTomoriState,
  loadUserCacheEntry,
  log,
} from "./bot-context.js";
import type { BotNatsConnection, TomoriState, UserCacheEntry } from "./bot-context.js";

/** The keys a result names in `invalidated`; the same shape for every command kind. */
export type InvalidatedKeys = CommandResult["invalidated"];

let client: MemoryClient | undefined;
let node: CacheNode | undefined;

export interface MemoryConnections {
  /** As the bot's NATS user (deploy: `bot-<name>`, inboxPrefix `_INBOX.bot.<name>`): commands and lookups. */
  commands: BotNatsConnection;
  /** As this process's cache-node user (deploy: `cache-node-<node>`, inboxPrefix `_INBOX.cache.<node>`).
   *  On a server without permissions (`make run`) both may be the same connection. */
  invalidations: BotNatsConnection;
  /**
   * Different for each of the bot's processes (a shard id) and the same across restarts of one
   * process: it names the node's durable consumer (cache-node-<node>), so a restarted process
   * resumes where it stopped and applies what it missed.
   */
  node: string;
}

export async function startMemory(connections: MemoryConnections): Promise<void> {
  client = await MemoryClient.start(connections.commands, { timeoutMs: 15_000 });
  node = await CacheNode.start(connections.invalidations, { name: connections.node, maxEntries: 20_000, ttlMs: 30 * 60_000 });
  // Code that still reads the bot's older in-process caches drops them with the node, whoever
  // made the change (this process, another shard, a panel, the operator's CLI).
  node.onInvalidate((change) => {
    if (change.kind === "flush") {
      clearAllStateCaches();
    } else if (change.cache === "tomori_state") {
      invalidateTomoriStateCache(change.key);
    } else if (change.cache === "user") {
      invalidateUserCache(change.key);
    }
  });
}

export async function stopMemory(): Promise<void> {
  await client?.close();
  await node?.close();
}

export function memory(): MemoryClient {
  if (client === undefined) throw new Error("startMemory() has not run");
  return client;
}

function cacheNode(): CacheNode {
  if (node === undefined) throw new Error("startMemory() has not run");
  return node;
}

/** The bot's state reads, through the cache node: a load that races a save stores nothing. */
export const caches = {
  tomoriState(serverDiscId: string): Promise<TomoriState | null> {
    return cacheNode().getOrLoad("tomori_state", serverDiscId, () => loadTomoriState(serverDiscId));
  },
  user(userDiscId: string): Promise<UserCacheEntry> {
    return cacheNode().getOrLoad("user", userDiscId, () => loadUserCacheEntry(userDiscId));
  },
};

/**
 * Drop what a command made stale, at once, in this process. The worker also publishes each key
 * as a cache.invalidate event, which every process's node applies (this one's again, harmlessly).
 */
export function dropInvalidated(keys: InvalidatedKeys): void {
  for (const { cache, key } of keys ?? []) {
    cacheNode().invalidate(cache, key);
  }
  if (keys?.length) log.info(`memory: dropped ${keys.length} cache entries`);
}
