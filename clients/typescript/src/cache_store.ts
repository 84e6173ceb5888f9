// The cache node's store: a bounded TTL cache, least recently used out first, with one
// loader call for concurrent misses of a key. It knows nothing of NATS: cache_node.ts feeds it
// invalidations and says whether the node is live (it stores only then).

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
export type Invalidation =
  | { kind: "key"; cache: string; key: string; reason: string; held: boolean }
  | { kind: "flush"; reason: string; entries: number };

type Entry = { value: unknown; expiresAt: number };

/**
 * One loader call shared by concurrent callers of one key: the key's current generation.
 * invalidate() and flush() end it: the flight is detached from the key and marked stale, and
 * a stale flight stores nothing. A flight started while the node is not live is stale from
 * the start.
 */
class Flight {
  promise!: Promise<unknown>;
  constructor(public stale: boolean) {}
}

const keyOf = (cache: string, key: string) => JSON.stringify([cache, key]);

export class CacheStore {
  readonly stats: CacheStats = { hits: 0, misses: 0, loads: 0, invalidations: 0, flushes: 0, evictions: 0,
    expirations: 0, bypasses: 0, gaps: 0 };
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recent first.
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Flight>();

  constructor(readonly maxEntries: number, readonly ttlMs: number, private readonly live: () => boolean,
    private readonly notify: (change: Invalidation) => void, private readonly clock: () => number) {}

  get size(): number {
    return this.entries.size;
  }

  holdsAnything(): boolean {
    return this.entries.size > 0 || this.flights.size > 0;
  }

  contains(cache: string, key: string): boolean {
    const entry = this.entries.get(keyOf(cache, key));
    return entry !== undefined && entry.expiresAt > this.clock();
  }

  getOrLoad<T>(cache: string, key: string, load: () => Promise<T>): Promise<T> {
    const k = keyOf(cache, key);
    if (this.live()) {
      const entry = this.entries.get(k);
      if (entry !== undefined) {
        this.entries.delete(k);
        if (entry.expiresAt > this.clock()) {
          this.entries.set(k, entry);
          this.stats.hits += 1;
          return Promise.resolve(entry.value as T);
        }
        this.stats.expirations += 1;
      }
    }
    this.stats.misses += 1;
    if (!this.live()) this.stats.bypasses += 1;
    let flight = this.flights.get(k);
    if (flight === undefined) {
      const started = new Flight(!this.live());
      this.flights.set(k, started);
      started.promise = this.load(k, started, load);
      flight = started;
    }
    return flight.promise as Promise<T>;
  }

  private async load<T>(k: string, flight: Flight, load: () => Promise<T>): Promise<T> {
    this.stats.loads += 1;
    const loadedAt = this.clock(); // the TTL counts from before the read: conservative
    let value: T;
    try {
      value = await load();
    } finally {
      if (this.flights.get(k) === flight) this.flights.delete(k);
    }
    if (!flight.stale && this.live()) this.store(k, value, loadedAt);
    return value;
  }

  private store(k: string, value: unknown, loadedAt: number): void {
    this.entries.delete(k);
    this.entries.set(k, { value, expiresAt: loadedAt + this.ttlMs });
    while (this.entries.size > this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value!);
      this.stats.evictions += 1;
    }
  }

  /** Drop one key, and keep a load already in flight for it from storing. True if held. */
  invalidate(cache: string, key: string, reason: string): boolean {
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
  flush(reason: string): number {
    const dropped = this.entries.size;
    this.entries.clear();
    for (const flight of this.flights.values()) flight.stale = true;
    this.flights.clear();
    this.stats.flushes += 1;
    this.notify({ kind: "flush", reason, entries: dropped });
    return dropped;
  }
}
