import { headers as natsHeaders } from "@nats-io/nats-core";
export const MIN_MESSAGES = 8;
export const MAX_MESSAGES = 1000;
/**
 * Publish messages as one atomic batch. The server's answer when all were stored; null when
 * none was (too few or too many for a batch, refused, e.g. for a duplicate Nats-Msg-Id, no
 * answer in time, a connection error): the caller then publishes them one by one, and the
 * duplicate window drops whatever a late commit did store.
 */
export async function publishAtomic(js, messages, timeoutMs) {
    if (messages.length < MIN_MESSAGES || messages.length > MAX_MESSAGES)
        return null;
    const withId = (m) => {
        const h = natsHeaders();
        h.set("Nats-Msg-Id", m.msgId);
        return h;
    };
    try {
        const [first, ...rest] = messages;
        const last = rest.pop();
        const batch = await js.startBatch(first.subject, first.payload, { headers: withId(first), timeout: timeoutMs });
        for (const m of rest)
            batch.add(m.subject, m.payload, { headers: withId(m) });
        const ack = await batch.commit(last.subject, last.payload, { timeout: timeoutMs, headers: withId(last) });
        if (ack.count !== messages.length)
            return null;
        return { stream: ack.stream, seq: ack.seq, count: ack.count };
    }
    catch {
        return null;
    }
}
