// JetStream atomic batch publishing (nats-server 2.12+, a stream with allow_atomic), through
// nats.js's own batch publisher. The server stores all of a batch, in order, with one write,
// or none of it. Batches cost about as much as a few single publishes whatever their size
// (worker/shared/atomic.py has the measurements), so fewer than MIN_MESSAGES go one by one.
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/nats-core";

export const MIN_MESSAGES = 8;
export const MAX_MESSAGES = 1000;

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
export async function publishAtomic(js: JetStreamClient, messages: BatchMessage[],
  timeoutMs: number): Promise<StoredBatch | null> {
  if (messages.length < MIN_MESSAGES || messages.length > MAX_MESSAGES) return null;
  const withId = (m: BatchMessage) => {
    const h = natsHeaders();
    h.set("Nats-Msg-Id", m.msgId);
    return h;
  };
  try {
    const [first, ...rest] = messages;
    const last = rest.pop()!;
    const batch = await js.startBatch(first!.subject, first!.payload, { headers: withId(first!), timeout: timeoutMs });
    for (const m of rest) batch.add(m.subject, m.payload, { headers: withId(m) });
    const ack = await batch.commit(last.subject, last.payload, { timeout: timeoutMs, headers: withId(last) });
    if (ack.count !== messages.length) return null;
    return { stream: ack.stream, seq: ack.seq, count: ack.count };
  } catch {
    return null;
  }
}
