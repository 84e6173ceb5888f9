// Concurrent calls run as one batch call (worker/shared/coalescer.py's model): calls that
// arrive while a batch is running go together in the next one; an idle coalescer runs a lone
// call at once, through the single path, so batching adds no latency at low load.

type Pending<T, R> = { item: T; resolve: (r: R) => void; reject: (e: unknown) => void };

export class Coalescer<T, R> {
  private waiting: Pending<T, R>[] = [];
  private live = 0;

  constructor(
    private readonly batch: (items: T[]) => Promise<R[] | null>,
    private readonly single: (item: T) => Promise<R>,
    private readonly maxBatch: number,
    private readonly runners = 1,
  ) {
    if (maxBatch < 1 || runners < 1) throw new RangeError("maxBatch and runners must be at least 1");
  }

  call(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.live < this.runners) {
        this.live += 1;
        // Started on the next microtask: calls made in the same tick join one batch.
        queueMicrotask(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length) {
        const taken = this.waiting.splice(0, this.maxBatch);
        if (taken.length === 1) await this.one(taken[0]!);
        else await this.together(taken);
      }
    } finally {
      this.live -= 1;
    }
  }

  private async together(taken: Pending<T, R>[]): Promise<void> {
    let results: R[] | null = null;
    try {
      results = await this.batch(taken.map((p) => p.item));
    } catch {
      results = null; // a batch that fails runs again item by item: each caller gets its own answer
    }
    if (results === null || results.length !== taken.length) {
      await Promise.all(taken.map((p) => this.one(p)));
      return;
    }
    taken.forEach((p, i) => p.resolve(results[i]!));
  }

  private async one(p: Pending<T, R>): Promise<void> {
    try {
      p.resolve(await this.single(p.item));
    } catch (err) {
      p.reject(err);
    }
  }
}
