// CacheNode: caching, TTL, bound, single flight, invalidation events, races, gaps, a NATS
// restart, on a nats-server of its own; then against the running worker: saves invalidate,
// loads racing saves never leave a stale value, a consumer deleted under the node.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { CacheNode, MemoryClient, invalidateSubject, newCommandId } from "@memory-worker/client";
import { connectTo, createFields, database, env, fixture, serverMemories, startNats, waitFor } from "./support/harness.mjs";

const unique = (prefix = "") => `${prefix}${newCommandId().slice(0, 16)}`;

/** A loader returning `value`, counting calls; with `hold`, it waits for release(). */
function loader(value, { hold = false } = {}) {
  let release;
  let started;
  const released = new Promise((resolve) => { release = resolve; });
  const began = new Promise((resolve) => { started = resolve; });
  const load = async () => {
    load.calls += 1;
    started();
    if (hold) await released;
    return value;
  };
  Object.assign(load, { calls: 0, release, started: began });
  return load;
}

/** Records every change a node reports. */
function recorder(node) {
  const seen = [];
  node.onInvalidate((change) => seen.push(change));
  return {
    seen,
    invalidated: (cache, key) => seen.some((c) => c.kind === "key" && c.cache === cache && c.key === key),
    flushes: () => seen.filter((c) => c.kind === "flush"),
  };
}

async function publishInvalidation(js, cache, key, data) {
  const eventId = `test:${newCommandId()}`;
  const payload = data ?? JSON.stringify({ event_id: eventId, command_id: `cmd-${newCommandId()}`,
    occurred_at: new Date().toISOString(), cache, key, reason: "memory_saved" });
  await js.publish(invalidateSubject(cache, key), payload, { msgID: eventId, expect: { streamName: "MEMORY_EVENTS" } });
}

describe("on a nats-server of its own", () => {
  let server;
  let nc;
  let js;
  const nodes = [];
  const makeNode = async (options = {}, connection = nc) => {
    const node = await CacheNode.start(connection, { name: unique("it-"), pollMs: 500, ...options });
    nodes.push(node);
    return node;
  };

  before(async () => {
    server = await startNats();
    nc = await connectTo(server.url, { maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "MEMORY_EVENTS", subjects: ["memory.saved.>", "memory.evicted.>",
      "memory.removed.>", "cache.invalidate.>", "metrics.>"], duplicate_window: 600 * 1e9 });
  });

  after(async () => {
    for (const node of nodes) await node.close({ deleteConsumer: true }).catch(() => undefined);
    await nc?.close();
    await server?.dispose();
  });

  test("a node's name and bounds are checked", async () => {
    await assert.rejects(CacheNode.start(nc, { name: "has space" }), /name must match/);
    await assert.rejects(CacheNode.start(nc, { name: "n", maxEntries: 0 }), /maxEntries/);
    await assert.rejects(CacheNode.start(nc, { name: "n", ttlMs: -1 }), /ttlMs/);
  });

  test("getOrLoad caches until the TTL runs out", async () => {
    const node = await makeNode({ ttlMs: 300 });
    const first = loader("v1");
    assert.equal(await node.getOrLoad("user", "u", first), "v1");
    assert.equal(await node.getOrLoad("user", "u", loader("unused")), "v1");
    assert.equal(node.stats.hits, 1);
    await waitFor(() => !node.contains("user", "u"), { what: "the entry to expire" });
    assert.equal(await node.getOrLoad("user", "u", loader("v2")), "v2");
    assert.equal(node.stats.expirations, 1);
  });

  test("the bound evicts the least recently used", async () => {
    const node = await makeNode({ maxEntries: 2 });
    await node.getOrLoad("user", "a", loader(1));
    await node.getOrLoad("user", "b", loader(2));
    await node.getOrLoad("user", "a", loader(0)); // a is now the most recent
    await node.getOrLoad("user", "c", loader(3));
    assert.deepEqual([node.contains("user", "a"), node.contains("user", "b"), node.contains("user", "c")],
      [true, false, true]);
    assert.equal(node.stats.evictions, 1);
  });

  test("concurrent loads of a key share one loader call; a failed load is shared and not cached", async () => {
    const node = await makeNode();
    const held = loader("shared", { hold: true });
    const calls = [1, 2, 3].map(() => node.getOrLoad("user", "k", held));
    await held.started;
    held.release();
    assert.deepEqual(await Promise.all(calls), ["shared", "shared", "shared"]);
    assert.equal(held.calls, 1);
    let failures = 0;
    const failing = async () => { failures += 1; throw new Error("db down"); };
    const both = await Promise.allSettled([node.getOrLoad("user", "f", failing), node.getOrLoad("user", "f", failing)]);
    assert.deepEqual(both.map((s) => s.status), ["rejected", "rejected"]);
    assert.equal(failures, 1);
    assert.equal(node.contains("user", "f"), false);
  });

  test("an invalidation event evicts exactly that key (and the node says so)", async () => {
    const node = await makeNode();
    const seen = recorder(node);
    const ws = unique();
    const other = unique();
    const oddKey = `${unique()}.with dots/and spaces`; // percent-encoded in the subject
    for (const [cache, key] of [["tomori_state", ws], ["tomori_state", other], ["user", ws], ["user", oddKey]]) {
      await node.getOrLoad(cache, key, loader(`${cache}:${key}`));
    }
    await publishInvalidation(js, "tomori_state", ws);
    await publishInvalidation(js, "user", oddKey);
    await waitFor(() => seen.invalidated("user", oddKey), { what: "the odd key's invalidation" });
    assert.equal(node.contains("tomori_state", ws), false);
    assert.equal(node.contains("user", oddKey), false);
    assert.equal(node.contains("tomori_state", other), true);
    assert.equal(node.contains("user", ws), true); // same id, other cache
    assert.deepEqual(seen.flushes(), []);
    assert.ok(seen.seen.some((c) => c.kind === "key" && c.key === ws && c.held && c.reason === "event"));
  });

  test("an unreadable payload still invalidates the subject's key", async () => {
    const node = await makeNode();
    const seen = recorder(node);
    const ws = unique();
    const other = unique();
    await node.getOrLoad("tomori_state", ws, loader(1));
    await node.getOrLoad("tomori_state", other, loader(2));
    await publishInvalidation(js, "tomori_state", ws, "not json");
    await waitFor(() => seen.invalidated("tomori_state", ws), { what: "the invalidation" });
    assert.equal(node.contains("tomori_state", ws), false);
    assert.equal(node.contains("tomori_state", other), true);
  });

  test("a message its consumer did not deliver is neither applied nor acknowledged", async () => {
    // Acknowledging is publishing to the reply subject a message carries: the node answers only
    // its consumer's deliveries (isAckSubject), whatever else reaches its inbox (issue 35).
    const node = await makeNode();
    const seen = recorder(node);
    const ws = unique();
    await node.getOrLoad("tomori_state", ws, loader("cached"));
    const trap = `trap.${unique()}`;
    const trapped = [];
    const sub = nc.subscribe(`${trap}.>`, { callback: (_err, m) => trapped.push(m.subject) });
    const jsm = await jetstreamManager(nc);
    const canary = `CANARY_${unique().replaceAll("-", "")}`;
    await jsm.streams.add({ name: canary, subjects: [`${canary}.>`] });
    await js.publish(`${canary}.x`, "kept");
    const forged = JSON.stringify({ event_id: "forged", command_id: "forged", occurred_at: new Date().toISOString(),
      cache: "tomori_state", key: ws, reason: "memory_saved" });
    // (A reply shaped like an ack subject, $JS.ACK.>, nats-server refuses from any client.)
    for (const reply of [`${trap}.plain`, `$JS.API.STREAM.PURGE.${canary}`]) {
      nc.publish(node.inbox.subject, forged, { reply });
    }
    // A real invalidation after them, on the same inbox: once it is applied, they were read.
    const after = unique();
    await node.getOrLoad("user", after, loader(1));
    await publishInvalidation(js, "user", after);
    await waitFor(() => seen.invalidated("user", after), { what: "the invalidation sent after the forged messages" });
    await nc.flush();
    assert.deepEqual(trapped, []);
    assert.equal(node.contains("tomori_state", ws), true);
    assert.equal((await jsm.streams.info(canary)).state.messages, 1);
    sub.unsubscribe();
    await jsm.streams.delete(canary);
  });

  test("a load racing an invalidation does not cache the stale value", async () => {
    const node = await makeNode();
    const seen = recorder(node);
    const ws = unique();
    const stale = loader("before the save", { hold: true });
    const first = node.getOrLoad("tomori_state", ws, stale);
    await stale.started; // the load has read the old row and not returned yet
    await publishInvalidation(js, "tomori_state", ws); // the save commits and invalidates
    await waitFor(() => seen.invalidated("tomori_state", ws), { what: "the invalidation" });
    // A caller arriving after the invalidation does not join the stale load.
    assert.equal(await node.getOrLoad("tomori_state", ws, loader("after the save")), "after the save");
    stale.release();
    assert.equal(await first, "before the save"); // its caller asked before the save: fine
    const third = loader("unused");
    assert.equal(await node.getOrLoad("tomori_state", ws, third), "after the save");
    assert.equal(third.calls, 0);
  });

  test("a load racing a flush or a direct invalidate does not cache", async () => {
    const node = await makeNode();
    for (const drop of [() => node.flush("test"), () => node.invalidate("user", "u")]) {
      const held = loader("old", { hold: true });
      const pending = node.getOrLoad("user", "u", held);
      await held.started;
      drop();
      held.release();
      assert.equal(await pending, "old");
      assert.equal(node.contains("user", "u"), false);
    }
  });

  test("a consumer sequence gap (another puller took a delivery) flushes", async () => {
    const node = await makeNode();
    const ws = unique();
    await node.getOrLoad("tomori_state", ws, loader("cached"));
    const thief = await js.consumers.get("MEMORY_EVENTS", node.consumer);
    const stolen = thief.fetch({ max_messages: 1, expires: 10_000 });
    let took = false;
    const taking = (async () => { for await (const m of await stolen) { m.ack(); took = true; } })();
    await nc.flush();
    await waitFor(async () => { await publishInvalidation(js, "user", unique()); return took; },
      { what: "the second puller to get a delivery", everyMs: 20 });
    await taking;
    await publishInvalidation(js, "user", unique()); // the node's next delivery skips one
    await waitFor(() => node.stats.gaps >= 1, { what: "the gap" });
    assert.equal(node.contains("tomori_state", ws), false);
  });

  test("a redelivery is not a gap: a delivery another puller left unacknowledged comes to the node, nothing flushed", async () => {
    const node = await makeNode();
    const seen = recorder(node);
    const ws = unique();
    await node.getOrLoad("tomori_state", ws, loader("cached"));
    const thief = await js.consumers.get("MEMORY_EVENTS", node.consumer);
    const stolen = thief.fetch({ max_messages: 1, expires: 10_000 });
    let taken = null;
    const taking = (async () => { for await (const m of await stolen) taken = m; })();
    await nc.flush();
    // One invalidation at a time, each delivered to the node or taken by the thief before the
    // next: nothing is published after the thief's, so the node's next delivery is its redelivery.
    await waitFor(async () => {
      const key = unique();
      await publishInvalidation(js, "user", key);
      await waitFor(() => taken !== null || seen.invalidated("user", key), { what: `a delivery of ${key}` });
      return taken !== null;
    }, { what: "the second puller to get a delivery", everyMs: 1 });
    await taking;
    const stolenKey = taken.json().key;
    assert.equal(seen.invalidated("user", stolenKey), false);
    // The consumer sequence moved on at the thief's delivery; the redelivery skips it, as a
    // second delivery of a message the node never saw.
    taken.nak();
    await waitFor(() => seen.invalidated("user", stolenKey), { what: "the redelivery to the node" });
    assert.equal(node.stats.gaps, 0);
    assert.deepEqual(seen.flushes(), []);
    assert.equal(node.contains("tomori_state", ws), true);
    assert.equal(node.live, true);
  });

  test("a consumer deleted under the node: it stops caching, recreates it, and comes back", async () => {
    const node = await makeNode();
    const seen = recorder(node);
    await node.getOrLoad("user", "d", loader("before"));
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.delete("MEMORY_EVENTS", node.consumer);
    await waitFor(() => seen.flushes().length >= 1, { what: "the flush", timeoutMs: 10_000 });
    assert.equal(node.contains("user", "d"), false);
    await waitFor(() => node.live, { what: "the node to be live again", timeoutMs: 10_000 });
    await waitFor(() => jsm.consumers.info("MEMORY_EVENTS", node.consumer).then(() => true, () => false),
      { what: "the consumer to be recreated" });
    assert.equal(await node.getOrLoad("user", "d", loader("after")), "after");
    await publishInvalidation(js, "user", "d");
    await waitFor(() => !node.contains("user", "d"), { what: "the invalidation after the recreation" });
  });

  test("a NATS restart flushes; offline it reads through; caching and invalidations resume", async () => {
    const node = await makeNode({ pollMs: 300 });
    await node.getOrLoad("tomori_state", "ws", loader("before"));
    assert.equal(node.contains("tomori_state", "ws"), true);
    await server.stop();
    await waitFor(() => !node.live, { what: "the node to go offline", timeoutMs: 5000 });
    assert.equal(node.contains("tomori_state", "ws"), false);
    assert.ok(node.stats.flushes >= 1);
    assert.equal(await node.getOrLoad("tomori_state", "ws", loader("offline")), "offline");
    assert.equal(node.size, 0);
    await server.start(); // same port, same data: the consumer survives
    await waitFor(() => node.live, { what: "the node to be live again", timeoutMs: 15_000 });
    assert.equal(await node.getOrLoad("tomori_state", "ws", loader("after")), "after");
    assert.equal(node.contains("tomori_state", "ws"), true);
    await publishInvalidation(js, "tomori_state", "ws");
    await waitFor(() => !node.contains("tomori_state", "ws"), { what: "the invalidation after the restart" });
  });

  test("a node started again under its name is delivered what was stored while it was gone", async () => {
    const name = unique("again-");
    const first = await CacheNode.start(nc, { name, pollMs: 500 });
    await first.close();
    await publishInvalidation(js, "user", "missed");
    const again = await CacheNode.start(nc, { name, pollMs: 500 });
    nodes.push(again);
    const seen = recorder(again);
    await waitFor(() => again.stats.invalidations >= 1 || seen.invalidated("user", "missed"),
      { what: "the missed invalidation" });
    assert.equal(again.live, true);
  });
});

describe("against the running worker", () => {
  let nc;
  let client;
  let db;
  let node;

  before(async () => {
    nc = await connectTo(env("NATS_URL"));
    client = await MemoryClient.start(nc, { timeoutMs: 30_000 });
    db = database(env("DATABASE_URL"));
    node = await CacheNode.start(nc, { name: unique("e2e-"), pollMs: 1000 });
  });

  after(async () => {
    await node?.close({ deleteConsumer: true });
    await client?.close();
    await nc?.drain();
    await db?.end();
  });

  const contents = async (ws) => (await serverMemories(db, ws)).map((r) => r.content);

  test("a save makes the node reload the workspace's memory list", async () => {
    const ws = fixture().workspaces[5];
    const seen = recorder(node);
    assert.deepEqual(await node.getOrLoad("tomori_state", ws, () => contents(ws)), []);
    const result = await client.create(createFields(ws, "{user} likes kites"));
    assert.deepEqual(result.invalidated, [{ cache: "tomori_state", key: ws }]);
    await waitFor(() => seen.invalidated("tomori_state", ws), { what: "the save's invalidation" });
    assert.deepEqual(await node.getOrLoad("tomori_state", ws, () => contents(ws)), ["{user} likes kites"]);
  });

  test("loads racing saves: once a save's invalidation is applied, no read serves a list without it", async () => {
    const ws = fixture().workspaces[0];
    const seen = recorder(node);
    let stop = false;
    // Readers hammer the key while saves commit: loads keep racing invalidations.
    const readers = Array.from({ length: 4 }, async () => {
      while (!stop) {
        await node.getOrLoad("tomori_state", ws, () => contents(ws));
        // A hit resolves at once: give the event loop its turn (deliveries, replies).
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
    try {
      for (let i = 0; i < 12; i++) {
        const before = seen.seen.length;
        const content = `{user} race ${i}`;
        // A lineage each: the e2e worker keeps at most 5 memories a lineage.
        const result = await client.create(createFields(ws, content,
          { persona: { id: 1, lineage_id: 200 + i, name: "Tomori" } }));
        assert.equal(result.data.status, "memory_saved_successfully");
        await waitFor(() => seen.seen.slice(before).some((c) => c.kind === "flush" || c.key === ws),
          { what: `save ${i}'s invalidation` });
        for (let j = 0; j < 3; j++) {
          assert.ok((await node.getOrLoad("tomori_state", ws, () => contents(ws))).includes(content),
            `a stale list after save ${i}`);
        }
      }
    } finally {
      stop = true;
      await Promise.all(readers);
    }
    assert.ok(node.stats.hits > 0, "the node did cache between saves");
  });
});
