import { createInbox } from "@nats-io/nats-core";
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import { CacheStore } from "./cache_store.js";
import { decodeToken, EVENTS_STREAM, INVALIDATE_FILTER, isAckSubject } from "./subjects.js";
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const CONSUMER_PREFIX = "cache-node-";
const BATCH = 256; // deliveries per pull request
const HEARTBEAT = 100;
const REQUEST_TIMEOUT = 408;
const CONSUMER_NOT_FOUND = 10014;
const STREAM_NOT_FOUND = 10059;
const nanos = (ms) => Math.round(ms * 1_000_000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export function consumerName(nodeName) {
    return `${CONSUMER_PREFIX}${nodeName}`;
}
export function consumerConfig(nodeName, ackWaitMs = 10_000, inactiveThresholdMs = 24 * 3600_000) {
    const name = consumerName(nodeName);
    const config = {
        name,
        durable_name: name,
        filter_subject: INVALIDATE_FILTER,
        // Only applies when the consumer is first created: a node that comes back later resumes
        // where it stopped, so it is delivered what it missed.
        deliver_policy: DeliverPolicy.New,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(ackWaitMs),
        max_deliver: -1,
        max_ack_pending: 10_000,
    };
    // A node that never comes back does not keep its consumer forever; one that comes back
    // later finds it recreated and flushes.
    if (inactiveThresholdMs > 0)
        config.inactive_threshold = nanos(inactiveThresholdMs);
    return config;
}
/** The keys one `cache.invalidate.<cache>.<key>` message names; both subject and payload
 *  count, should they disagree. Empty: nothing readable, so the caller flushes. */
export function parseInvalidation(subject, data) {
    const keys = new Map();
    const parts = subject.split(".");
    if (parts.length === 4 && parts[0] === "cache" && parts[1] === "invalidate") {
        try {
            const key = decodeToken(parts[3]);
            keys.set(JSON.stringify([parts[2], key]), [parts[2], key]);
        }
        catch {
            // an undecodable token: the payload may still name the key
        }
    }
    try {
        const event = JSON.parse(new TextDecoder().decode(data));
        if (typeof event === "object" && event !== null) {
            const { cache, key } = event;
            if (typeof cache === "string" && typeof key === "string")
                keys.set(JSON.stringify([cache, key]), [cache, key]);
        }
    }
    catch {
        // unreadable payload
    }
    return [...keys.values()].sort();
}
function deliveryInfo(reply) {
    // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>, or with
    // <domain>.<account hash> after ACK (and a trailing token) on newer servers.
    const tokens = reply.split(".");
    if (tokens.length === 9)
        tokens.splice(2, 0, "_", "");
    if (tokens.length < 11 || tokens[0] !== "$JS" || tokens[1] !== "ACK")
        return null;
    return { deliveries: parseInt(tokens[6], 10), consumerSeq: parseInt(tokens[8], 10) };
}
function connectionInboxPrefix(nc) {
    // nats.js keeps the connect options on the connection; its own requests use this prefix.
    return nc.options?.inboxPrefix;
}
function apiErrorCode(err) {
    return err instanceof JetStreamApiError ? err.apiError().err_code ?? null : null;
}
/** Deliveries of the node's inbox, awaited one at a time with a bound. */
class Inbox {
    subject;
    queue = [];
    wake = null;
    sub;
    /** Why the subscription ended, e.g. a permissions violation: nothing more will arrive. */
    error = null;
    constructor(nc) {
        // Under the connection's own inbox prefix: a cache-node user may subscribe only there
        // (connect({ inboxPrefix: "_INBOX.cache.<node>" }) under the shipped accounts).
        this.subject = createInbox(connectionInboxPrefix(nc));
        this.sub = nc.subscribe(this.subject, {
            callback: (err, msg) => {
                if (err)
                    this.error = err;
                else
                    this.queue.push(msg);
                this.interrupt();
            },
        });
    }
    interrupt() {
        const wake = this.wake;
        this.wake = null;
        wake?.();
    }
    async next(timeoutMs) {
        if (!this.queue.length) {
            let timer;
            await new Promise((resolve) => {
                this.wake = resolve;
                timer = setTimeout(resolve, timeoutMs);
            });
            clearTimeout(timer);
            this.wake = null;
        }
        return this.queue.shift() ?? null;
    }
    close() {
        if (!this.sub.isClosed())
            this.sub.unsubscribe();
        this.interrupt();
    }
}
/** A bounded TTL cache, LRU, invalidated through its own JetStream consumer on MEMORY_EVENTS. */
export class CacheNode {
    nc;
    options;
    name;
    consumer;
    store;
    listeners = new Set();
    config;
    nextSubject;
    jsm;
    inbox = null;
    isLive = false;
    started = false;
    closed = false;
    everStarted = false;
    stopping = false;
    resync = false;
    connected = true;
    lastConsumerSeq = null;
    outstanding = 0;
    loop = null;
    statusWatch = null;
    constructor(nc, options) {
        this.nc = nc;
        this.options = options;
        this.name = options.name;
        this.consumer = consumerName(options.name);
        this.store = new CacheStore(options.maxEntries, options.ttlMs, () => this.isLive, (change) => this.notify(change), () => performance.now());
        this.config = consumerConfig(options.name, options.ackWaitMs, options.inactiveThresholdMs);
        const prefix = options.domain ? `$JS.${options.domain}.API` : "$JS.API";
        this.nextSubject = `${prefix}.CONSUMER.MSG.NEXT.${EVENTS_STREAM}.${this.consumer}`;
    }
    /**
     * A started node on the bot's connection: the consumer created or updated, what was missed
     * while stopped applied, caching. Rejects when MEMORY_EVENTS does not exist yet (the worker
     * creates it when it first starts).
     */
    static async start(nc, options) {
        const { name, maxEntries = 10_000, ttlMs = 300_000, pollMs = 5_000, ackWaitMs = 10_000, inactiveThresholdMs = 24 * 3600_000, catchUpLimit = 10_000, domain } = options ?? {};
        if (typeof name !== "string" || !NAME.test(name)) {
            throw new RangeError(`cache node name must match ${NAME.source}: ${JSON.stringify(name)}`);
        }
        if (!(Number.isInteger(maxEntries) && maxEntries >= 1))
            throw new RangeError("maxEntries must be an integer of at least 1");
        if (!(ttlMs > 0))
            throw new RangeError("ttlMs must be positive");
        if (!(pollMs > 0) || !(ackWaitMs > 0))
            throw new RangeError("pollMs and ackWaitMs must be positive");
        const node = new CacheNode(nc, { name, maxEntries, ttlMs, pollMs, ackWaitMs, inactiveThresholdMs, catchUpLimit,
            ...(domain ? { domain } : {}) });
        // No account-info check ($JS.API.INFO): a cache-node user may not ask it.
        node.jsm = await jetstreamManager(nc, { checkAPI: false, ...(domain ? { domain } : {}) });
        await node.run();
        return node;
    }
    /** True while the node caches: started, connected, consumer in place, caught up. */
    get live() {
        return this.isLive;
    }
    /** Entries held. */
    get size() {
        return this.store.size;
    }
    get stats() {
        return this.store.stats;
    }
    /** Whether an unexpired value is held for the key (no stats, no LRU touch). */
    contains(cache, key) {
        return this.store.contains(cache, key);
    }
    /** The cached value, or the loader's (one loader call for concurrent misses of a key);
     *  stored only while the node is live and no invalidation of the key came during the load. */
    getOrLoad(cache, key, load) {
        return this.store.getOrLoad(cache, key, load);
    }
    /** Drop one key, and keep a load already in flight for it from storing. True if held. */
    invalidate(cache, key) {
        return this.store.invalidate(cache, key, "manual");
    }
    /** Drop everything, and keep every load in flight from storing. Returns the entries dropped. */
    flush(reason = "manual") {
        return this.store.flush(reason);
    }
    /**
     * Called with every key the node drops (an invalidation event or a direct call) and every
     * flush (then drop everything derived from the cache). Returns a function that unsubscribes.
     */
    onInvalidate(callback) {
        this.listeners.add(callback);
        return () => { this.listeners.delete(callback); };
    }
    /** Stop reading invalidations and stop caching. The connection stays the bot's. */
    async close({ deleteConsumer = false } = {}) {
        this.isLive = false;
        this.closed = true;
        if (this.started) {
            this.started = false;
            this.stopping = true;
            this.inbox?.interrupt();
            await this.loop;
            this.loop = null;
            this.inbox?.close();
            this.inbox = null;
            if (!this.nc.isClosed()) {
                // Acks sent, and the server has dropped our interest.
                await this.nc.flush().catch(() => undefined);
            }
        }
        if (deleteConsumer) {
            try {
                await this.jsm.consumers.delete(EVENTS_STREAM, this.consumer);
            }
            catch (err) {
                if (apiErrorCode(err) !== CONSUMER_NOT_FOUND)
                    throw err;
            }
            this.lastConsumerSeq = null;
        }
    }
    notify(change) {
        for (const listener of this.listeners) {
            try {
                listener(change);
            }
            catch {
                // a listener's failure is its own; the node goes on applying invalidations
            }
        }
    }
    async run() {
        this.stopping = false;
        this.resync = false;
        this.connected = !this.nc.isClosed();
        this.statusWatch ??= this.watchConnection();
        await this.sync();
        this.started = true;
        this.everStarted = true;
        this.loop = this.consume();
    }
    async watchConnection() {
        for await (const status of this.nc.status()) {
            if (this.closed)
                break;
            if (status.type === "disconnect") {
                // Invalidations can no longer arrive: stop caching.
                this.connected = false;
                if (this.started)
                    this.goOffline("nats_disconnected");
            }
            else if (status.type === "reconnect") {
                // Anything may have happened meanwhile: flush again and re-check the consumer.
                this.connected = true;
                this.resync = true;
                if (this.started)
                    this.goOffline("nats_reconnected");
                this.inbox?.interrupt();
            }
        }
        this.connected = false; // the connection is closed, or the node
        if (!this.closed)
            this.goOffline("nats_closed");
    }
    goOffline(reason) {
        const wasLive = this.isLive;
        this.isLive = false;
        if (this.store.holdsAnything() || wasLive)
            this.store.flush(reason);
    }
    /** (Re)create the consumer, flush if anything may have been missed, catch up, go live. */
    async sync() {
        this.isLive = false;
        let before = null;
        try {
            before = await this.jsm.consumers.info(EVENTS_STREAM, this.consumer);
        }
        catch (err) {
            if (apiErrorCode(err) !== CONSUMER_NOT_FOUND)
                throw err;
        }
        let info;
        try {
            info = await this.jsm.consumers.add(EVENTS_STREAM, this.config);
        }
        catch (err) {
            if (apiErrorCode(err) === STREAM_NOT_FOUND) {
                throw new Error(`${EVENTS_STREAM} does not exist yet: start the worker first (it creates the stream)`, { cause: err });
            }
            throw err;
        }
        const reasons = [];
        if (before === null && this.everStarted)
            reasons.push("consumer_recreated");
        // Delivered while we were not reading (e.g. to a pull request of a stopped node).
        if (info.num_ack_pending)
            reasons.push("unacknowledged_deliveries");
        const delivered = info.delivered?.consumer_seq ?? 0;
        if (this.lastConsumerSeq !== null && before !== null && delivered !== this.lastConsumerSeq) {
            reasons.push("deliveries_not_seen");
        }
        if (this.store.size && info.delivered) {
            // Messages removed (aged out, purged) before they were delivered to us.
            const stream = await this.jsm.streams.info(EVENTS_STREAM);
            if (stream.state.first_seq > info.delivered.stream_seq + 1)
                reasons.push("stream_truncated");
        }
        if (reasons.length)
            this.store.flush(reasons.join(","));
        this.lastConsumerSeq = delivered;
        this.inbox?.close();
        this.inbox = new Inbox(this.nc);
        this.outstanding = 0;
        // A subscription the server refuses is answered before the flush's pong: a node that
        // cannot hear its deliveries must not go live.
        await this.nc.flush();
        this.checkInbox();
        // Catch up on what the consumer holds for us before serving anything from the cache.
        const pending = info.num_pending ?? 0;
        if (pending > this.options.catchUpLimit) {
            // Cheaper to start cold; the backlog still arrives (and invalidates) afterwards.
            this.store.flush("backlog_too_large");
        }
        else if (pending) {
            // no_wait: the server sends what it has, then a 404/408 status ends the request.
            this.request(pending, { noWait: true });
            let applied = 0;
            while (applied < pending && !this.stopping) {
                const msg = await this.inbox.next(Math.max(this.options.pollMs, 2000));
                if (msg === null)
                    break;
                const status = pullStatus(msg);
                if (status === HEARTBEAT)
                    continue;
                if (status !== null)
                    break;
                applied += 1;
                this.apply(msg);
            }
            // Nothing may be served that a missing invalidation would have dropped.
            if (applied < pending)
                this.store.flush("catch_up_incomplete");
        }
        // A reconnect while we synced asks for another sync before caching.
        this.isLive = this.connected && !this.resync && !this.stopping;
    }
    request(batch, { expiresMs, noWait = false }) {
        const body = { batch };
        if (expiresMs)
            body.expires = nanos(expiresMs);
        if (noWait)
            body.no_wait = true;
        this.nc.publish(this.nextSubject, JSON.stringify(body), { reply: this.inbox.subject });
    }
    /** Continuous pull: one lingering request at a time, each delivery applied on arrival. */
    async consume() {
        let failures = 0;
        let deadline = 0;
        while (!this.stopping) {
            try {
                if (!this.connected) {
                    if (this.isLive || this.store.size)
                        this.goOffline("nats_disconnected_detected");
                    await sleep(100);
                    continue;
                }
                if (this.resync || this.inbox === null) {
                    this.resync = false;
                    await this.sync();
                    deadline = 0;
                    continue;
                }
                if (this.outstanding <= 0 || performance.now() >= deadline) {
                    this.request(BATCH, { expiresMs: this.options.pollMs });
                    this.outstanding = BATCH;
                    deadline = performance.now() + this.options.pollMs + 1000;
                }
                // Short slices: the checks above run at least every 250 ms.
                const msg = await this.inbox.next(Math.min(Math.max(deadline - performance.now(), 10), 250));
                this.checkInbox();
                // A delivery that arrived is applied even with a resync pending: an invalidation only drops.
                if (msg === null) {
                    if (performance.now() >= deadline) {
                        // No answer at all (a request lost in a reconnect?): ask again.
                        this.outstanding = 0;
                        await this.checkConsumer();
                    }
                    continue;
                }
                const status = pullStatus(msg);
                if (status === HEARTBEAT)
                    continue;
                if (status !== null) {
                    // 408 expired, 404 nothing, 409 consumer deleted or limits: the request is over.
                    this.outstanding = 0;
                    const description = msg.headers?.description?.toLowerCase() ?? "";
                    if (status === 409 && description.includes("deleted")) {
                        this.goOffline("consumer_deleted");
                        this.resync = true;
                    }
                    else if (status === REQUEST_TIMEOUT) {
                        await this.checkConsumer();
                    }
                    continue;
                }
                this.outstanding -= 1;
                this.apply(msg);
                failures = 0;
            }
            catch {
                // The consumer or stream went away, or the server is restarting: stop caching, come
                // back through a full resync.
                failures += 1;
                this.goOffline("consumer_error");
                this.resync = true;
                await sleep(Math.min(200 * failures, 5000));
            }
        }
    }
    checkInbox() {
        const error = this.inbox?.error;
        if (error) {
            throw new Error(`cache node ${this.name} cannot read its inbox ${this.inbox.subject} (${error.message}); `
                + `under per-role permissions, connect as its cache-node user with inboxPrefix "_INBOX.cache.${this.name}"`, { cause: error });
        }
    }
    /** While idle: the consumer must still exist (deleted, or expired on the server). */
    async checkConsumer() {
        if (!this.connected)
            return;
        try {
            await this.jsm.consumers.info(EVENTS_STREAM, this.consumer);
        }
        catch (err) {
            if (apiErrorCode(err) !== CONSUMER_NOT_FOUND)
                throw err;
            this.goOffline("consumer_missing");
            this.resync = true;
        }
    }
    /** Apply one delivery, then ack it. */
    apply(msg) {
        // Not delivered by the node's consumer: neither applied nor acknowledged (an ack is a
        // publish to whatever reply subject the message carries).
        if (!isAckSubject(msg.reply ?? "", EVENTS_STREAM, this.consumer))
            return;
        const info = deliveryInfo(msg.reply ?? "");
        if (info !== null) {
            const last = this.lastConsumerSeq;
            if (last !== null && info.consumerSeq > last + 1 && info.deliveries <= 1) {
                // A first delivery skipped ahead: the server delivered something we never saw.
                this.store.stats.gaps += 1;
                this.store.flush("consumer_sequence_gap");
            }
            if (last === null || info.consumerSeq > last)
                this.lastConsumerSeq = info.consumerSeq;
        }
        const keys = parseInvalidation(msg.subject, msg.data);
        if (!keys.length)
            this.store.flush("unreadable_invalidation");
        for (const [cache, key] of keys)
            this.store.invalidate(cache, key, "event");
        this.nc.publish(msg.reply, "+ACK");
    }
}
/** The server's status on a pull (100 heartbeat, 404, 408, 409 ...), null for a delivery. */
function pullStatus(msg) {
    if (msg.reply)
        return null;
    return msg.headers?.code ?? 0;
}
