// MemoryClient.shadowed() and shadow(): shadow mode on the bot's side (docs/design.md, section 3.6).
// On a nats-server of its own with no worker: the bot's own write is held up at most timeoutMs by a
// dry run nobody answers, its value is returned and its error thrown unchanged, and the report
// reaches memory.shadow.<workspace token> with the right fields (read back from the stream); a
// report that cannot be published is only logged. Against the running worker (tests/e2e's, through
// tests/e2e/test_e2e_typescript_client.py): the dry run writes nothing and the worker pairs the
// report with it (memory_worker.shadow_pairs).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { MemoryClient, SHADOW_TIMEOUT_MS, encodeToken, lookupOutcome, newCommandId } from "@memory-worker/client";
import { connectTo, createFields, database, env, fixture, serverMemories, startNats, waitFor } from "./support/harness.mjs";

const decoder = new TextDecoder();
const SAVED = { success: true, message: "Memory saved successfully",
  data: { status: "memory_saved_successfully", scope: "server_wide", content_saved: "{user} grows tomatoes" } };

describe("without a worker", () => {
  let server;
  let nc;
  let jsm;
  let client;

  before(async () => {
    server = await startNats();
    nc = await connectTo(server.url);
    jsm = await jetstreamManager(nc);
    client = await MemoryClient.start(nc);
  });

  after(async () => {
    await client?.close();
    await nc?.close();
    await server?.dispose();
  });

  /** The worker's command stream, with nobody reading it: publishes are stored, nothing is answered. */
  async function commandStream() {
    await jsm.streams.delete("MEMORY_COMMANDS").catch(() => undefined);
    await jsm.streams.add({ name: "MEMORY_COMMANDS", subjects: ["memory.*.*"], duplicate_window: 600 * 1e9 });
  }

  /** The last command stored on `memory.<kind>.<workspace token>`: its Nats-Msg-Id and payload (null: none). */
  async function lastStored(kind, workspaceId) {
    const msg = await jsm.streams.getMessage("MEMORY_COMMANDS", { last_by_subj: `memory.${kind}.${encodeToken(workspaceId)}` });
    return msg === null ? null : { msgId: msg.header.get("Nats-Msg-Id"), body: JSON.parse(decoder.decode(msg.data)) };
  }


  test("a dry run nobody answers times out: the own write runs, its value is returned, the report says timed_out", async () => {
    await commandStream();
    const ws = "shadow ws.1"; // a token of its own: memory.<kind>.shadow%20ws%2E1
    const timeoutMs = 300;
    const own = structuredClone(SAVED);
    const call = client.shadowed("create", createFields(ws, "{user} grows tomatoes"), async () => own, { timeoutMs });
    assert.equal(await call, own); // the very value, unchanged
    await client.shadowReportsSent();

    const dry = await lastStored("create", ws);
    assert.equal(dry.body.dry_run, true);
    assert.equal(dry.msgId, `${dry.body.command_id}:dry`); // the real command may follow under its id
    assert.match(dry.body.reply_to, /^_INBOX\./);
    assert.equal(dry.body.tool_args.memory_content, "{user} grows tomatoes");
    const report = await lastStored("shadow", ws);
    assert.equal(report.msgId, report.body.command_id);
    assert.notEqual(report.body.command_id, dry.body.command_id);
    assert.match(report.body.command_id, /^[0-9a-f]{32}$/);
    assert.ok(!Number.isNaN(Date.parse(report.body.issued_at)), report.body.issued_at);
    const { command_id, issued_at, ...fields } = report.body;
    assert.deepEqual(fields, { workspace_id: ws, reply_to: null, shadowed_id: dry.body.command_id, kind: "create",
      timed_out: true, result: SAVED, error: null });
  });

  test("the default timeout is 500 ms, and report() says what the own write gave", async () => {
    await commandStream();
    const ws = "200000000000000002";
    const command = { workspace_id: ws, actor: { id: "4" }, scope: "server", action: "add", lineage_id: 1, content: "y",
      command_id: newCommandId() };
    const call = client.shadowed("manual", command, async () => ({ status: "success", row: { id: 9 } }),
      { report: (value) => ({ data: { status: value.status === "success" ? "added" : value.status, memory_id: value.row.id } }) });
    assert.deepEqual(await call, { status: "success", row: { id: 9 } });
    assert.equal(SHADOW_TIMEOUT_MS, 500);
    await client.shadowReportsSent();
    // The bot's own command_id names the dry run.
    assert.equal((await lastStored("manual", ws)).body.command_id, command.command_id);
    const report = (await lastStored("shadow", ws)).body;
    assert.equal(report.shadowed_id, command.command_id);
    assert.equal(report.kind, "manual");
    assert.deepEqual(report.result, { data: { status: "added", memory_id: 9 } });
    assert.equal(report.timed_out, true); // nobody answered within the default timeout
  });

  test("the own write's error is thrown unchanged, and reported as its message", async () => {
    await commandStream();
    const ws = "200000000000000003";
    const thrown = new Error("insert into personal_memories failed");
    await assert.rejects(client.shadowed("seed_bio", { workspace_id: ws, identity_user_id: "pb:1", is_new_identity: true,
      bio: "hi" }, async () => { throw thrown; }, { timeoutMs: 100, report: () => ({}) }), (error) => error === thrown);
    await client.shadowReportsSent();
    const report = (await lastStored("shadow", ws)).body;
    assert.deepEqual([report.kind, report.timed_out, report.result, report.error],
      ["seed_bio", true, null, "insert into personal_memories failed"]);
  });

  test("no command stream: the refused dry run ends the wait at once, and the report's failure is only logged", async () => {
    await jsm.streams.delete("MEMORY_COMMANDS").catch(() => undefined);
    const warned = [];
    const warn = console.warn;
    console.warn = (...args) => warned.push(args.join(" "));
    try {
      // A timeout far beyond the test's own: only a wait the refusal ended lets the call return.
      const call = client.shadowed("reinforce", { workspace_id: "200000000000000004", lineage_id: 1, memories: [] },
        async () => "done", { timeoutMs: 3_600_000, report: (value) => ({ data: { status: value } }) });
      assert.equal(await call, "done");
      await client.shadowReportsSent();
    } finally {
      console.warn = warn;
    }
    assert.equal(warned.length, 1, warned.join("\n"));
    assert.match(warned[0], /shadow report [0-9a-f]{32} was not sent/);
  });

  test("a report() that throws, or gives no object, sends nothing and is only logged; the own write's value stands", async () => {
    await commandStream();
    const ws = "200000000000000005";
    const warned = [];
    const warn = console.warn;
    console.warn = (...args) => warned.push(args.join(" "));
    try {
      const command = () => ({ workspace_id: ws, lineage_id: 1, memories: [] });
      assert.equal(await client.shadowed("reinforce", command(), async () => 7,
        { timeoutMs: 50, report: () => { throw new Error("no mapping"); } }), 7);
      assert.equal(await client.shadowed("reinforce", command(), async () => 8, { timeoutMs: 50, report: () => null }), 8);
      await client.shadowReportsSent();
    } finally {
      console.warn = warn;
    }
    assert.equal(warned.length, 2, warned.join("\n"));
    assert.match(warned[0], /not sent: no mapping/);
    assert.match(warned[1], /must be an object/);
    assert.equal(await lastStored("shadow", ws), null);
  });
});

describe("against the worker", () => {
  let nc;
  let client;
  let db;

  before(async () => {
    nc = await connectTo(env("NATS_URL"));
    client = await MemoryClient.start(nc, { timeoutMs: 30_000 });
    db = database(env("DATABASE_URL"));
  });

  after(async () => {
    await client?.close();
    await nc?.drain();
    await db?.end();
  });

  async function pair(commandId) {
    return waitFor(async () => {
      const { rows } = await db.query(`SELECT kind, dry_status, bot_status, bot_error, outcome, differences
        FROM memory_worker.shadow_pairs WHERE command_id = $1 AND outcome IS NOT NULL`, [commandId]);
      return rows[0];
    }, { what: `the shadow pair of ${commandId}` });
  }

  test("the dry run is answered in time and writes nothing; the report is paired with it", async () => {
    const [ws] = fixture().shadow_workspaces;
    // A generous timeout: the pairing, not the latency, is tested here.
    const options = { timeoutMs: 10_000 };
    const agreeing = { ...createFields(ws, "{user} grows tomatoes"), command_id: newCommandId() };
    assert.deepEqual(await client.shadowed("create", agreeing, async () => SAVED, options), SAVED);

    const thrown = new Error("the bot's insert failed");
    const failing = { ...createFields(ws, "{user} grows tomatoes"), command_id: newCommandId() };
    await assert.rejects(client.shadowed("create", failing, async () => { throw thrown; }, options), (e) => e === thrown);

    const refusing = { ...createFields(ws, "{user} grows tomatoes"), command_id: newCommandId() };
    const refused = { success: false, error: "Server memory limit reached.", data: { status: "memory_save_failed_limit_exceeded" } };
    await client.shadowed("create", refusing, async () => refused, options);
    await client.shadowReportsSent();

    const agreed = await pair(agreeing.command_id);
    assert.deepEqual(agreed, { kind: "create", dry_status: "memory_saved_successfully", bot_status: "memory_saved_successfully",
      bot_error: null, outcome: "agreed", differences: [] });
    const threw = await pair(failing.command_id);
    assert.deepEqual([threw.outcome, threw.bot_error, threw.differences],
      ["differed", "the bot's insert failed", [{ field: "error", worker: null, bot: "the bot's insert failed" }]]);
    const differed = await pair(refusing.command_id);
    assert.equal(differed.outcome, "differed");
    assert.deepEqual(differed.differences.map((d) => d.field), ["data.status", "error", "success"]);

    // Nothing of the dry runs was written, and their command ids are not used up: the lookup knows
    // the dry run as queued while it is in MEMORY_COMMANDS, then, once the worker purged it, not at all.
    assert.deepEqual(await serverMemories(db, ws), []);
    await waitFor(async () => (await lookupOutcome(nc, ws, agreeing.command_id)).outcome === "unknown",
      { what: "the dry run's command id to be unknown to the lookup", everyMs: 200 });
  });

  test("shadow(): a report sent by hand is answered with how it was paired", async () => {
    const [, ws] = fixture().shadow_workspaces;
    const answer = await client.shadow({ workspace_id: ws, shadowed_id: newCommandId(), kind: "update", timed_out: false,
      result: { data: { status: "memory_updated_successfully" } } });
    assert.equal(answer.success, true);
    assert.deepEqual(answer.data, { status: "recorded", outcome: "unpaired", differences: [] });
  });
});
