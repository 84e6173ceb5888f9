// MemoryClient and lookupOutcome against the running worker (tests/e2e's worker, through
// tests/e2e/test_e2e_typescript_client.py): every command kind and its statuses (the parity
// conversation), a repeat answered through the lookup, a refused reply_to.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { CommandDeadLettered, MemoryClient, ResultTimeout, isInvalidCommand, lookupOutcome, newCommandId } from "@memory-worker/client";
import { connectTo, createFields, database, env, fixture, serverMemories } from "./support/harness.mjs";

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

/** The fields with every {"$memory_of": step} replaced by that step's memory id (tests/e2e/conversation.py). */
function resolve(value, results) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, results));
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "$memory_of") return results[value.$memory_of].data.memory_id;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  }
  return value;
}

test("the scripted conversation through send(): every command kind, each step's status (and the parity test's results)", async () => {
  const steps = fixture().conversation;
  assert.ok(steps.length >= 30, `${steps.length} steps`);
  const results = [];
  for (const [i, step] of steps.entries()) {
    const result = await client.send(step.kind, resolve(step.fields, results));
    assert.equal(result.data.status, step.expect, `step ${i} (${step.kind}): ${JSON.stringify(result)}`);
    results.push(result);
  }
  assert.deepEqual(new Set(steps.map((s) => s.kind)), new Set(["create", "manual", "reinforce", "seed_bio", "update"]));
  writeFileSync(env("PARITY_OUT"), JSON.stringify(results));
});

test("a command the bot fills in itself keeps its command_id, issued_at and our reply_to", async () => {
  const [ws] = fixture().workspaces;
  const commandId = newCommandId();
  const result = await client.create({ ...createFields(ws, "{user} keeps bees"), command_id: commandId,
    issued_at: new Date().toISOString(), reply_to: client.replySubject() });
  assert.equal(result.command_id, commandId);
  assert.equal(result.data.status, "memory_saved_successfully");
  assert.deepEqual(result.invalidated, [{ cache: "tomori_state", key: ws }]);
});

test("the same command_id twice: JetStream drops the repeat, the lookup answers it, one row", async () => {
  const ws = fixture().workspaces[1];
  const command = { ...createFields(ws, "{user} likes green tea"), command_id: newCommandId() };
  const first = await client.create(command);
  const again = await client.create(command); // a fresh reply_to, the same Nats-Msg-Id: a duplicate
  assert.equal(first.data.status, "memory_saved_successfully");
  assert.deepEqual(again, first);
  assert.deepEqual((await serverMemories(db, ws)).map((r) => r.content), ["{user} likes green tea"]);
  const { rows } = await db.query("SELECT count(*)::int AS n FROM processed_commands WHERE command_id = $1",
    [command.command_id]);
  assert.equal(rows[0].n, 1);
});

test("lookupOutcome: processed with the stored result, unknown for a command never sent", async () => {
  const ws = fixture().workspaces[2];
  const result = await client.manual({ workspace_id: ws, actor: { id: "130000000000000001", is_manager: true },
    scope: "server", action: "add", lineage_id: 12, persona_id: 1, content: "{user} rows" });
  assert.equal(result.data.status, "added");
  const outcome = await lookupOutcome(nc, ws, result.command_id);
  assert.equal(outcome.outcome, "processed");
  assert.equal(outcome.kind, "manual");
  assert.deepEqual(outcome.result, result);
  const unknown = await lookupOutcome(nc, ws, `never-sent-${newCommandId()}`, { timeoutMs: 5000 });
  assert.equal(unknown.outcome, "unknown");
});

test("a reply_to outside the worker's allowed prefixes: dead-lettered; the client hears nothing and says why it may be", async () => {
  const ws = fixture().workspaces[3];
  // A bot whose permissions give it a private inbox prefix the operator has not allowed: the
  // worker answers neither its command nor its lookups there (issue 35).
  const privateNc = await connectTo(env("NATS_URL"), { inboxPrefix: "bot_inbox" });
  const privateClient = await MemoryClient.start(privateNc, { timeoutMs: 3000 });
  const command = { ...createFields(ws, "{user} sails"), command_id: newCommandId() };
  try {
    await assert.rejects(privateClient.create(command), (err) => {
      assert.ok(err instanceof ResultTimeout, String(err));
      assert.match(err.message, /inbox bot_inbox\.\S+ is under none of the worker's REPLY_SUBJECT_PREFIXES/);
      return true;
    });
    assert.deepEqual(await serverMemories(db, ws), []);
  } finally {
    await privateClient.close();
    await privateNc.drain();
  }
  // Asked from an allowed inbox, the lookup says why: CommandDeadLettered names the prefixes.
  const outcome = await lookupOutcome(nc, ws, command.command_id);
  assert.equal(outcome.outcome, "dead_lettered");
  assert.equal(outcome.dead_letter.reason, "invalid_command");
  assert.equal(outcome.dead_letter.reply_to_allowed, false);
  assert.deepEqual(outcome.dead_letter.allowed_reply_prefixes, ["_INBOX."]);
  assert.match(new CommandDeadLettered(outcome).message, /reply_to is not allowed.*_INBOX\./);
});

test("commands sent at the same moment all get their own results", async () => {
  const ws = fixture().workspaces[4];
  const contents = Array.from({ length: 20 }, (_, i) => `{user} fact ${i}`);
  const results = await Promise.all(contents.map((c, i) => (i % 2
    ? client.create(createFields(ws, c, { persona: { id: 1, lineage_id: 100 + i, name: "Tomori" } }))
    : client.manual({ workspace_id: ws, actor: { id: "130000000000000001", is_manager: true }, scope: "server",
      action: "add", lineage_id: 100 + i, persona_id: 1, content: c }))));
  assert.deepEqual(results.map((r) => r.data.status),
    contents.map((_, i) => (i % 2 ? "memory_saved_successfully" : "added")));
  assert.deepEqual((await serverMemories(db, ws)).map((r) => r.content).sort(), [...contents].sort());
});

test("the statuses the conversation leaves out: a create's db_error and memory_command_invalid, a panel's host-protected and failed", async () => {
  const { workspace: ws, host, identity } = fixture().statuses;
  // The bot's database fails inserts of 'permanent failure...' (tests/e2e/directory.py): no retry can fix it.
  const failedCreate = await client.create(createFields(ws, "permanent failure of a model save"));
  assert.equal(failedCreate.success, false);
  assert.equal(failedCreate.data.status, "memory_save_failed_db_error", JSON.stringify(failedCreate));
  const failedPanel = await client.manual({ workspace_id: ws, actor: { id: "130000000000000001", is_manager: true },
    scope: "server", action: "add", lineage_id: 7, persona_id: 1, content: "permanent failure of a panel add" });
  assert.deepEqual([failedPanel.success, failedPanel.data.status], [false, "failed"], JSON.stringify(failedPanel));
  assert.ok(failedPanel.data.reason);
  assert.equal(isInvalidCommand(failedPanel), false);

  // The host is at full privacy: acting for the identity they host, nothing is written.
  const protectedPanel = await client.manual({ workspace_id: ws, actor: { id: host, is_manager: false },
    scope: "personal", action: "add", lineage_id: 7, persona_id: 1, identity_id: identity, content: "{user} hums" });
  assert.deepEqual([protectedPanel.success, protectedPanel.data.status], [false, "host-protected"],
    JSON.stringify(protectedPanel));

  // Within the contract (20,000 characters) but over the worker's size limit (64 KiB): 4-byte
  // characters make it 80 kB. A create answers a CommandResult with that status.
  const big = "\u{1F327}".repeat(20_000);
  const tooBig = await client.create(createFields(ws, big));
  assert.deepEqual([tooBig.success, tooBig.data.status], [false, "memory_command_invalid"], JSON.stringify(tooBig).slice(0, 500));
  assert.match(tooBig.data.reason, /over the limit of 65536/);
  assert.deepEqual(await serverMemories(db, ws), []);
  const { rows } = await db.query("SELECT count(*)::int AS n FROM processed_commands WHERE command_id = $1",
    [tooBig.command_id]);
  assert.equal(rows[0].n, 0);
});

test("manual, seedBio and update answer a command refused unapplied with the contract's InvalidCommandResult", async () => {
  const ws = fixture().statuses.workspace;
  const big = "\u{1F327}".repeat(20_000);
  const answers = [
    await client.manual({ workspace_id: ws, actor: { id: "130000000000000001", is_manager: true }, scope: "server",
      action: "add", lineage_id: 7, persona_id: 1, content: big }),
    await client.seedBio({ workspace_id: ws, identity_user_id: `pk:${newCommandId()}`, is_new_identity: true, bio: big }),
    await client.update({ ...createFields(ws, "x"), tool_args: { memory_id: 1, memory_content: big } }),
  ];
  for (const answer of answers) {
    assert.ok(isInvalidCommand(answer), JSON.stringify(answer).slice(0, 500));
    assert.deepEqual([answer.success, answer.data.status], [false, "memory_command_invalid"]);
    assert.match(answer.data.reason, /over the limit of 65536/);
  }
  assert.deepEqual(await serverMemories(db, ws), []);
});

test("a repeat of a command dead-lettered as invalid gives up at once: CommandDeadLettered, nothing re-sent", async () => {
  const ws = fixture().statuses.workspace;
  const privateNc = await connectTo(env("NATS_URL"), { inboxPrefix: "bot_inbox" });
  const privateClient = await MemoryClient.start(privateNc, { timeoutMs: 3000 });
  const command = { ...createFields(ws, "{user} is refused twice"), command_id: newCommandId() };
  try {
    await assert.rejects(privateClient.create(command), ResultTimeout);  // nothing answers its inbox
  } finally {
    await privateClient.close();
    await privateNc.drain();
  }
  // The same command_id from an allowed inbox: JetStream drops it as a duplicate, the lookup
  // says dead-lettered as invalid_command, and a re-send would be refused the same way.
  await assert.rejects(client.create(command), (err) => {
    assert.ok(err instanceof CommandDeadLettered, String(err));
    assert.equal(err.outcome.dead_letter.reason, "invalid_command");
    return true;
  });
  // Re-sent, it would have been saved this time (its reply_to is now allowed).
  assert.deepEqual((await serverMemories(db, ws)).filter((r) => r.content === "{user} is refused twice"), []);
  assert.equal((await lookupOutcome(nc, ws, command.command_id)).outcome, "dead_lettered");
});

test("a repeat of a command dead-lettered for another reason is sent again under a derived message id", async () => {
  const ws = fixture().statuses.workspace;
  const command = { ...createFields(ws, "permanent failure, then a repeat"), command_id: newCommandId() };
  const first = await client.create(command);
  assert.equal(first.data.status, "memory_save_failed_db_error");
  assert.equal((await lookupOutcome(nc, ws, command.command_id)).dead_letter.reason, "permanent_error");
  // A duplicate ack; the lookup says dead-lettered as permanent_error: not a reason to give
  // up. Only the re-sent command is answered (without it: silence, then CommandDeadLettered).
  const again = await client.create(command);
  assert.equal(again.data.status, "memory_save_failed_db_error");
  assert.equal(again.command_id, command.command_id);
});
