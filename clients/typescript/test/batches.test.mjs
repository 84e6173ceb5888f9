// MemoryClient on a nats-server of its own with no worker: commands sent at the same moment
// are stored as one JetStream atomic batch, each exactly once, and nothing is lost when the
// server refuses a batch (the stored commands are read back from the stream).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { MemoryClient, ResultTimeout, lookupOutcome, newCommandId } from "@memory-worker/client";
import { connectTo, startNats } from "./support/harness.mjs";

const KINDS = ["create", "manual", "reinforce", "seed_bio"];
let server;
let nc;
let jsm;

before(async () => {
  server = await startNats();
  nc = await connectTo(server.url);
  jsm = await jetstreamManager(nc);
});

after(async () => {
  await nc?.close();
  await server?.dispose();
});

async function commandStream({ atomic = true } = {}) {
  await jsm.streams.delete("MEMORY_COMMANDS").catch(() => undefined);
  await jsm.streams.add({ name: "MEMORY_COMMANDS", subjects: KINDS.map((k) => `memory.${k}.*`),
    duplicate_window: 600 * 1e9, allow_atomic: atomic });
}

/** [Nats-Msg-Id, Nats-Batch-Id or null] of every stored command, in stream order. */
async function stored() {
  const { state } = await jsm.streams.info("MEMORY_COMMANDS");
  const out = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages; seq++) {
    const msg = await jsm.streams.getMessage("MEMORY_COMMANDS", { seq });
    out.push([msg.header.get("Nats-Msg-Id"), msg.header.get("Nats-Batch-Id") || null]);
  }
  return out;
}

/** As a bot sends: each waits for its result. No worker runs, so each send ends in
 *  ResultTimeout after the client has acted on its acknowledgement. */
async function sendAtOnce(client, ids) {
  const settled = await Promise.allSettled(ids.map((id, i) =>
    client.create({ workspace_id: `ws-${i % 3}`, command_id: id, n: i }, { timeoutMs: 1000 })));
  for (const s of settled) assert.ok(s.status === "rejected" && s.reason instanceof ResultTimeout, String(s.reason));
}

test("commands sent at once are stored as one atomic batch", async () => {
  await commandStream();
  const ids = Array.from({ length: 12 }, (_, i) => `batched-${i}-${newCommandId()}`);
  const client = await MemoryClient.start(nc);
  await sendAtOnce(client, ids);
  await client.close();
  const rows = await stored();
  assert.deepEqual(rows.map(([id]) => id).sort(), [...ids].sort()); // each once, none taken for a duplicate
  assert.equal(new Set(rows.map(([, batch]) => batch)).size, 1);
  assert.notEqual(rows[0][1], null);
});

test("a batch holding a command already stored is refused, and each command is stored once", async () => {
  await commandStream();
  const ids = Array.from({ length: 8 }, (_, i) => `repeat-${i}-${newCommandId()}`);
  const client = await MemoryClient.start(nc);
  await assert.rejects(client.create({ workspace_id: "ws-0", command_id: ids[3] }, { timeoutMs: 500 }), ResultTimeout);
  await sendAtOnce(client, ids);
  await client.close();
  const rows = await stored();
  // The refused batch stored nothing; one by one, the repeat was reported as a duplicate and
  // sent again under a derived id, as a lone repeat always is.
  assert.ok(rows.every(([, batch]) => batch === null), JSON.stringify(rows));
  const base = (id) => id.split(":resend:")[0];
  assert.deepEqual(rows.map(([id]) => base(id)).sort(), [...ids, ids[3]].sort());
  assert.deepEqual(rows.filter(([id]) => id.includes(":resend:")).map(([id]) => base(id)), [ids[3]]);
});

test("a stream that takes no batches still gets every command, one by one", async () => {
  await commandStream({ atomic: false });
  const ids = Array.from({ length: 10 }, (_, i) => `unbatched-${i}-${newCommandId()}`);
  const client = await MemoryClient.start(nc);
  await sendAtOnce(client, ids);
  await client.close();
  const rows = await stored();
  assert.deepEqual(rows.map(([id]) => id).sort(), [...ids].sort());
  assert.ok(rows.every(([, batch]) => batch === null));
});

test("lookupOutcome is null when no worker answers", async () => {
  assert.equal(await lookupOutcome(nc, "ws-0", "any", { timeoutMs: 300 }), null);
});

test("bad input is refused with what is wrong", async () => {
  await assert.rejects(MemoryClient.start(nc, { timeoutMs: 0 }), /timeoutMs must be positive/);
  const client = await MemoryClient.start(nc);
  await assert.rejects(client.create({ command_id: "x" }), /needs a workspace_id/);
  await client.close();
  await assert.rejects(client.create({ workspace_id: "w" }), /closed/);
});
