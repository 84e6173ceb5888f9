// A worker SIGKILLed with commands in flight, on a nats-server and a database of its own:
// every command the bot sent ends in exactly one effect, through the client's own lookups
// and the bot's retries under the same command_id (a ResultTimeout says: retry, same id).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryClient, ResultTimeout, newCommandId } from "@memory-worker/client";
import { connectTo, createFields, database, env, fixture, startNats, waitFor, workerProcess } from "./support/harness.mjs";

const COMMANDS = 60;
const IN_FLIGHT = 8;
// The worker's minimum: what the killed worker held is redelivered after it.
const ACK_WAIT_S = 20;
let server;
let worker;
let nc;
let db;

before(async () => {
  server = await startNats();
  worker = await workerProcess({ natsUrl: server.url, databaseUrl: env("KILL_DATABASE_URL"),
    extra: { MEMORY_PARTITIONS: "2", MAX_SERVER_MEMORIES: "1000", ACK_WAIT_SECONDS: String(ACK_WAIT_S) } }).start();
  nc = await connectTo(server.url, { maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  db = database(env("KILL_DATABASE_URL"));
});

after(async () => {
  await worker?.kill();
  await nc?.close();
  await db?.end();
  await server?.dispose();
});

async function processed(ids) {
  const { rows } = await db.query("SELECT count(*)::int AS n FROM processed_commands WHERE command_id = ANY($1)", [ids]);
  return rows[0].n;
}

test("a worker killed with commands in flight: each command has exactly one effect", async () => {
  const workspaces = fixture().kill_workspaces;
  const client = await MemoryClient.start(nc, { timeoutMs: 4000 });
  const commands = Array.from({ length: COMMANDS }, (_, i) => ({
    ...createFields(workspaces[i % workspaces.length], `{user} kill fact ${i}`), command_id: newCommandId() }));
  const ids = commands.map((c) => c.command_id);
  let timeouts = 0;
  // The bot's loop: a timeout is retried under the same command_id until a result arrives.
  const sendUntilAnswered = async (command) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await client.create(command);
      } catch (err) {
        if (!(err instanceof ResultTimeout) || attempt > 30) throw err;
        timeouts += 1;
      }
    }
  };
  const results = new Array(COMMANDS);
  let next = 0;
  const senders = Array.from({ length: IN_FLIGHT }, async () => {
    while (next < COMMANDS) {
      const i = next++;
      results[i] = await sendUntilAnswered(commands[i]);
    }
  });
  try {
    // Some applied, most not: kill the worker in the middle of the run, then bring it back.
    await waitFor(async () => (await processed(ids)) >= 10, { what: "the first commands to be applied" });
    await worker.kill("SIGKILL");
    assert.ok((await processed(ids)) < COMMANDS, "every command was applied before the kill: nothing was in flight");
    await worker.start();
    await Promise.all(senders);
  } finally {
    await client.close();
  }
  assert.deepEqual(results.map((r) => r.data.status), Array(COMMANDS).fill("memory_saved_successfully"));
  assert.deepEqual(results.map((r) => r.command_id), ids);
  // Exactly one effect each: one processed row per command, one memory per content.
  const { rows } = await db.query(
    "SELECT command_id, count(*)::int AS n FROM processed_commands WHERE command_id = ANY($1) GROUP BY command_id", [ids]);
  assert.equal(rows.length, COMMANDS);
  assert.ok(rows.every((r) => r.n === 1));
  const saved = await db.query(
    `SELECT m.content, count(*)::int AS n FROM server_memories m JOIN servers s USING (server_id)
     WHERE s.server_disc_id = ANY($1) GROUP BY m.content`, [workspaces]);
  assert.equal(saved.rows.length, COMMANDS);
  assert.ok(saved.rows.every((r) => r.n === 1), JSON.stringify(saved.rows.filter((r) => r.n !== 1)));
  assert.deepEqual(new Set(results.map((r) => r.data.memory_id)).size, COMMANDS);
  console.log(`kill test: ${timeouts} ResultTimeouts retried under the same command_id`);
});
