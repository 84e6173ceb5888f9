// @memory-worker/client under the shipped accounts (deploy/nats/accounts.conf), as a bot runs
// it: MemoryClient on the bot's connection (bot-tomori, its inbox prefix), CacheNode "a" on
// its cache-node user's. Nothing may need a permission those users lack (since issue 29, a bot
// creates no consumer at all). Run by tests/integration/test_nats_permissions.py, which starts
// the secured server and its worker and passes the roles' credentials.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { CacheNode, MemoryClient, lookupOutcome, newCommandId } from "@memory-worker/client";
import { connectTo, createFields, env, waitFor } from "../support/harness.mjs";

const roles = {};

/** A connection as `role` (BOT, CACHE), with the asynchronous errors (permission violations) it gets. */
async function connectAs(role, { inboxPrefix = env(`${role}_INBOX`) } = {}) {
  const errors = [];
  const nc = await connectTo(env("NATS_URL"), { user: env(`${role}_USER`), pass: env(`${role}_PASSWORD`),
    ...(inboxPrefix ? { inboxPrefix } : {}) });
  void (async () => {
    for await (const status of nc.status()) if (status.type === "error") errors.push(String(status.error));
  })();
  return { nc, errors };
}

before(async () => {
  roles.bot = await connectAs("BOT");
  roles.cache = await connectAs("CACHE");
});

after(async () => {
  for (const { nc } of Object.values(roles)) await nc?.close();
});

test("the bot's MemoryClient saves and looks up on the bot's connection", async () => {
  const memory = await MemoryClient.start(roles.bot.nc, { timeoutMs: 15_000 });
  try {
    const ws = `acc-${newCommandId().slice(0, 12)}`;
    const result = await memory.create(createFields(ws, "{user} keeps a garden"));
    assert.equal(result.data.status, "memory_saved_successfully", JSON.stringify(result));
    const outcome = await lookupOutcome(roles.bot.nc, ws, result.command_id, { timeoutMs: 5000 });
    assert.equal(outcome?.outcome, "processed");
    // Sent at the same moment: one atomic batch.
    const many = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      memory.create(createFields(ws, `{user} batch fact ${i}`))));
    assert.ok(many.every((r) => r.success), JSON.stringify(many.map((r) => r.data.status)));
  } finally {
    await memory.close();
  }
  assert.deepEqual(roles.bot.errors, []);
});

test("CacheNode \"a\" on its cache-node user: starts, caches, and drops a key a save made stale", async () => {
  const node = await CacheNode.start(roles.cache.nc, { name: "a", pollMs: 1000 });
  const memory = await MemoryClient.start(roles.bot.nc, { timeoutMs: 15_000 });
  try {
    assert.equal(node.live, true);
    const ws = `acc-${newCommandId().slice(0, 12)}`;
    assert.equal(await node.getOrLoad("tomori_state", ws, async () => "state"), "state");
    assert.equal(node.contains("tomori_state", ws), true);
    await memory.create(createFields(ws, "{user} invalidates the state"));
    await waitFor(() => !node.contains("tomori_state", ws), { what: "the invalidation of the saved workspace" });
    assert.equal(node.stats.gaps, 0);
  } finally {
    await memory.close();
    await node.close({ deleteConsumer: true });
  }
  assert.deepEqual(roles.cache.errors, []);
  assert.deepEqual(roles.bot.errors, []);
});

test("without its inbox prefix, neither starts deaf: the start is refused, saying why", async () => {
  for (const [role, start, hint] of [
    ["BOT", (nc) => MemoryClient.start(nc), /cannot subscribe to its reply inbox .*inboxPrefix "_INBOX\.bot\.<name>"/],
    // Its JetStream API requests are refused first (nats.js's reply inbox), saying so.
    ["CACHE", (nc) => CacheNode.start(nc, { name: "a" }), /Permissions Violation for Subscription to "_INBOX\./],
  ]) {
    const { nc } = await connectAs(role, { inboxPrefix: null });
    try {
      await assert.rejects(start(nc), hint);
    } finally {
      await nc.close();
    }
  }
});
