export declare class Coalescer<T, R> {
    private readonly batch;
    private readonly single;
    private readonly maxBatch;
    private readonly runners;
    private waiting;
    private live;
    constructor(batch: (items: T[]) => Promise<R[] | null>, single: (item: T) => Promise<R>, maxBatch: number, runners?: number);
    call(item: T): Promise<R>;
    private drain;
    private together;
    private one;
}
