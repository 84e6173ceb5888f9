import type { JetStreamClient } from "@nats-io/jetstream";
export declare const MIN_MESSAGES = 8;
export declare const MAX_MESSAGES = 1000;
export interface BatchMessage {
    subject: string;
    payload: Uint8Array;
    msgId: string;
}
export interface StoredBatch {
    stream: string;
    /** The stream sequence of the batch's last message. */
    seq: number;
    count: number;
}
/**
 * Publish messages as one atomic batch. The server's answer when all were stored; null when
 * none was (too few or too many for a batch, refused, e.g. for a duplicate Nats-Msg-Id, no
 * answer in time, a connection error): the caller then publishes them one by one, and the
 * duplicate window drops whatever a late commit did store.
 */
export declare function publishAtomic(js: JetStreamClient, messages: BatchMessage[], timeoutMs: number): Promise<StoredBatch | null>;
