// The cache node's store: a bounded TTL cache, least recently used out first, with one
// loader call for concurrent misses of a key. It knows nothing of NATS: cache_node.ts feeds it
// invalidations and says whether the node is live (it stores only then).
/**
 * One loader call shared by concurrent callers of one key: the key's current generation.
 * invalidate() and flush() end it: the flight is detached from the key and marked stale, and
 * a stale flight stores nothing. A flight started while the node is not live is stale from
 * the start.
 */
class Flight {
    stale;
    promise;
    constructor(stale) {
        this.stale = stale;
    }
}
const keyOf = (cache, key) => JSON.stringify([cache, key]);
export class CacheStore {
    maxEntries;
    ttlMs;
    live;
    notify;
    clock;
    stats = { hits: 0, misses: 0, loads: 0, invalidations: 0, flushes: 0, evictions: 0,
        expirations: 0, bypasses: 0, gaps: 0 };
    // A Map iterates in insertion order: re-inserting on a hit keeps the least recent first.
    entries = new Map();
    flights = new Map();
    constructor(maxEntries, ttlMs, live, notify, clock) {
        this.maxEntries = maxEntries;
        this.ttlMs = ttlMs;
        this.live = live;
        this.notify = notify;
        this.clock = clock;
    }
    get size() {
        return this.entries.size;
    }
    holdsAnything() {
        return this.entries.size > 0 || this.flights.size > 0;
    }
    contains(cache, key) {
        const entry = this.entries.get(keyOf(cache, key));
        return entry !== undefined && entry.expiresAt > this.clock();
    }
    getOrLoad(cache, key, load) {
        const k = keyOf(cache, key);
        if (this.live()) {
            const entry = this.entries.get(k);
            if (entry !== undefined) {
                this.entries.delete(k);
                if (entry.expiresAt > this.clock()) {
                    this.entries.set(k, entry);
                    this.stats.hits += 1;
                    return Promise.resolve(entry.value);
                }
                this.stats.expirations += 1;
            }
        }
        this.stats.misses += 1;
        if (!this.live())
            this.stats.bypasses += 1;
        let flight = this.flights.get(k);
        if (flight === undefined) {
            const started = new Flight(!this.live());
            this.flights.set(k, started);
            started.promise = this.load(k, started, load);
            flight = started;
        }
        return flight.promise;
    }
    async load(k, flight, load) {
        this.stats.loads += 1;
        const loadedAt = this.clock(); // the TTL counts from before the read: conservative
        let value;
        try {
            value = await load();
        }
        finally {
            if (this.flights.get(k) === flight)
                this.flights.delete(k);
        }
        if (!flight.stale && this.live())
            this.store(k, value, loadedAt);
        return value;
    }
    store(k, value, loadedAt) {
        this.entries.delete(k);
        this.entries.set(k, { value, expiresAt: loadedAt + this.ttlMs });
        while (this.entries.size > this.maxEntries) {
            this.entries.delete(this.entries.keys().next().value);
            this.stats.evictions += 1;
        }
    }
    /** Drop one key, and keep a load already in flight for it from storing. True if held. */
    invalidate(cache, key, reason) {
        const k = keyOf(cache, key);
        const held = this.entries.delete(k);
        const flight = this.flights.get(k);
        if (flight !== undefined) {
            flight.stale = true;
            this.flights.delete(k);
        }
        this.stats.invalidations += 1;
        this.notify({ kind: "key", cache, key, reason, held });
        return held;
    }
    /** Drop everything, and keep every load in flight from storing. Returns the entries dropped. */
    flush(reason) {
        const dropped = this.entries.size;
        this.entries.clear();
        for (const flight of this.flights.values())
            flight.stale = true;
        this.flights.clear();
        this.stats.flushes += 1;
        this.notify({ kind: "flush", reason, entries: dropped });
        return dropped;
    }
}
