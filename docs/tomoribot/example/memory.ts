// One memory client and one cache node per bot process, started once the NATS connection is up.
// Every site of the bot uses `memory()` and `dropInvalidated`; nothing else talks to the worker.
import { CacheNode, MemoryClient, ResultTimeout } from "@memory-worker/client";
import type { CommandResult } from "@memory-worker/client";
import { clearTomoriStateCache, invalidateTomoriStateCache } from "@/utils/cache/tomoriStateCache";
import { clearUserCache, invalidateUserCache } from "@/utils/cache/userCache";
import { log } from "@/utils/misc/logger";

/** A nats.js v3 connection, as `connect()` of `@nats-io/transport-node` returns it. */
export type NatsConnection = Parameters<typeof MemoryClient.start>[0];

/** The keys a result names in `invalidated`; the same shape for every command kind. */
export type InvalidatedKeys = CommandResult["invalidated"];

let client: MemoryClient | undefined;
let node: CacheNode | undefined;

export interface MemoryConnections {
  /** As the bot's NATS user (deploy: `bot-<name>`, inboxPrefix `_INBOX.bot.<name>`): commands and lookups. */
  commands: NatsConnection;
  /** As this process's cache-node user (deploy: `cache-node-<node>`, inboxPrefix `_INBOX.cache.<node>`).
   *  On a server without permissions (`make run`) both may be the same connection. */
  invalidations: NatsConnection;
  /**
   * Different for each of the bot's processes (a shard id) and the same across restarts of one
   * process: it names the node's durable consumer, so a restarted process applies what it missed.
   */
  node: string;
}

export async function startMemory(connections: MemoryConnections): Promise<void> {
  client = await MemoryClient.start(connections.commands, { timeoutMs: 15_000 });
  node = await CacheNode.start(connections.invalidations, { name: connections.node });
  // TomoriBot's own in-process caches drop an entry whenever the node does, whoever made the
  // change: this process, another shard, a panel answered elsewhere, the operator's CLI.
  node.onInvalidate((change) => {
    if (change.kind === "flush") {
      clearTomoriStateCache();
      clearUserCache();
    } else if (change.cache === "tomori_state") {
      invalidateTomoriStateCache(change.key);
    } else if (change.cache === "user") {
      invalidateUserCache(change.key);
    }
  });
}

export async function stopMemory(): Promise<void> {
  // Shadow mode's reports (section 12) are published in the background: let them go out first.
  await client?.shadowReportsSent();
  await client?.close();
  await node?.close();
}

export function memory(): MemoryClient {
  if (client === undefined) throw new Error("startMemory() has not run");
  return client;
}

/**
 * Drop what a command made stale, at once, in this process (through the node, so TomoriBot's
 * caches follow). The worker also publishes each key as a cache.invalidate event, which every
 * process's node applies (this one's again, harmlessly).
 */
export function dropInvalidated(keys: InvalidatedKeys): void {
  if (node === undefined) throw new Error("startMemory() has not run");
  for (const { cache, key } of keys ?? []) node.invalidate(cache, key);
}

/**
 * Send a command, and once more with the same command (the same command_id) if no answer came in
 * time: the worker applies a command id once and answers a repeat with the stored result, so the
 * second answer is the real one. `null` when neither came.
 */
export async function sendTwice<C extends { command_id?: string }, R>(send: (command: C) => Promise<R>, command: C):
  Promise<R | null> {
  const identified = { ...command, command_id: command.command_id ?? crypto.randomUUID() };
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    try {
      return await send(identified);
    } catch (error) {
      if (!(error instanceof ResultTimeout)) throw error;
      log.warn(`memory worker: no answer to ${identified.command_id} (attempt ${attempt})`);
    }
  }
  return null;
}
