import type { NatsConnection } from "@nats-io/nats-core";
import type { ConsumerConfig } from "@nats-io/jetstream";
import { type CacheStats, type Invalidation } from "./cache_store.js";
export type { CacheStats, Invalidation } from "./cache_store.js";
export interface CacheNodeOptions {
    /** The node's name, [A-Za-z0-9_-]{1,64}: its consumer is cache-node-<name>. One per process. */
    name: string;
    /** Entries held at most, least recently used out first (default 10000). */
    maxEntries?: number;
    /** How long an entry is served, from the start of its load (default 300000). */
    ttlMs?: number;
    /** How long a pull request lingers at the server (default 5000). */
    pollMs?: number;
    /** The consumer's ack wait: how soon a lost delivery is redelivered (default 10000). */
    ackWaitMs?: number;
    /** How long the server keeps the consumer of a node that is gone (default 24 h; 0 keeps it). */
    inactiveThresholdMs?: number;
    /** A backlog larger than this at start is not caught up first: the node flushes instead (default 10000). */
    catchUpLimit?: number;
    /** The JetStream domain, if the account uses one. */
    domain?: string;
}
export interface CloseOptions {
    /** Also delete the durable consumer (the node is gone for good). */
    deleteConsumer?: boolean;
}
export declare function consumerName(nodeName: string): string;
export declare function consumerConfig(nodeName: string, ackWaitMs?: number, inactiveThresholdMs?: number): Partial<ConsumerConfig>;
/** The keys one `cache.invalidate.<cache>.<key>` message names; both subject and payload
 *  count, should they disagree. Empty: nothing readable, so the caller flushes. */
export declare function parseInvalidation(subject: string, data: Uint8Array): Array<[string, string]>;
/** A bounded TTL cache, LRU, invalidated through its own JetStream consumer on MEMORY_EVENTS. */
export declare class CacheNode {
    private readonly nc;
    private readonly options;
    readonly name: string;
    readonly consumer: string;
    private readonly store;
    private readonly listeners;
    private readonly config;
    private readonly nextSubject;
    private jsm;
    private inbox;
    private isLive;
    private started;
    private closed;
    private everStarted;
    private stopping;
    private resync;
    private connected;
    private lastConsumerSeq;
    private outstanding;
    private loop;
    private statusWatch;
    private constructor();
    /**
     * A started node on the bot's connection: the consumer created or updated, what was missed
     * while stopped applied, caching. Rejects when MEMORY_EVENTS does not exist yet (the worker
     * creates it when it first starts).
     */
    static start(nc: NatsConnection, options: CacheNodeOptions): Promise<CacheNode>;
    /** True while the node caches: started, connected, consumer in place, caught up. */
    get live(): boolean;
    /** Entries held. */
    get size(): number;
    get stats(): Readonly<CacheStats>;
    /** Whether an unexpired value is held for the key (no stats, no LRU touch). */
    contains(cache: string, key: string): boolean;
    /** The cached value, or the loader's (one loader call for concurrent misses of a key);
     *  stored only while the node is live and no invalidation of the key came during the load. */
    getOrLoad<T>(cache: string, key: string, load: () => Promise<T>): Promise<T>;
    /** Drop one key, and keep a load already in flight for it from storing. True if held. */
    invalidate(cache: string, key: string): boolean;
    /** Drop everything, and keep every load in flight from storing. Returns the entries dropped. */
    flush(reason?: string): number;
    /**
     * Called with every key the node drops (an invalidation event or a direct call) and every
     * flush (then drop everything derived from the cache). Returns a function that unsubscribes.
     */
    onInvalidate(callback: (change: Invalidation) => void): () => void;
    /** Stop reading invalidations and stop caching. The connection stays the bot's. */
    close({ deleteConsumer }?: CloseOptions): Promise<void>;
    private notify;
    private run;
    private watchConnection;
    private goOffline;
    /** (Re)create the consumer, flush if anything may have been missed, catch up, go live. */
    private sync;
    private request;
    /** Continuous pull: one lingering request at a time, each delivery applied on arrival. */
    private consume;
    private checkInbox;
    /** While idle: the consumer must still exist (deleted, or expired on the server). */
    private checkConsumer;
    /** Apply one delivery, then ack it. */
    private apply;
}
