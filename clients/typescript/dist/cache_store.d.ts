export interface CacheStats {
    hits: number;
    /** Every getOrLoad that did not return a cached value. */
    misses: number;
    /** Loader calls (concurrent misses of a key share one). */
    loads: number;
    /** Invalidations applied (events and direct calls). */
    invalidations: number;
    flushes: number;
    /** Dropped by the size bound (least recently used first). */
    evictions: number;
    /** Dropped by the TTL. */
    expirations: number;
    /** Misses served while not live: loaded, not stored. */
    bypasses: number;
    /** Consumer sequence gaps seen. */
    gaps: number;
}
/** What the node dropped: one key (an invalidation) or everything (a flush). */
export type Invalidation = {
    kind: "key";
    cache: string;
    key: string;
    reason: string;
    held: boolean;
} | {
    kind: "flush";
    reason: string;
    entries: number;
};
export declare class CacheStore {
    readonly maxEntries: number;
    readonly ttlMs: number;
    private readonly live;
    private readonly notify;
    private readonly clock;
    readonly stats: CacheStats;
    private readonly entries;
    private readonly flights;
    constructor(maxEntries: number, ttlMs: number, live: () => boolean, notify: (change: Invalidation) => void, clock: () => number);
    get size(): number;
    holdsAnything(): boolean;
    contains(cache: string, key: string): boolean;
    getOrLoad<T>(cache: string, key: string, load: () => Promise<T>): Promise<T>;
    private load;
    private store;
    /** Drop one key, and keep a load already in flight for it from storing. True if held. */
    invalidate(cache: string, key: string, reason: string): boolean;
    /** Drop everything, and keep every load in flight from storing. Returns the entries dropped. */
    flush(reason: string): number;
}
