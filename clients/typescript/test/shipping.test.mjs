// What the package ships: dist/ is what src/ compiles to today, its modules import nothing
// Node-only (so Bun and other runtimes load it), and its public names are there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PACKAGE, "dist");
// What the client may import at run time: its own modules and the nats.js v3 core and JetStream.
const ALLOWED_PACKAGES = new Set(["@nats-io/nats-core", "@nats-io/jetstream"]);
// Declarations may also name the contract's types (erased from the JavaScript).
const ALLOWED_IN_DECLARATIONS = new Set([...ALLOWED_PACKAGES, "@memory-worker/contracts"]);
const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Every module specifier a source imports or re-exports, static or dynamic, per TypeScript's own parser. */
export function importSpecifiers(source) {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The specifiers of a module that are neither relative nor one of `allowed`. */
export function forbiddenImports(source, allowed) {
  return importSpecifiers(source).filter((s) => !s.startsWith("./") && (!allowed.has(s) || NODE_BUILTINS.has(s)));
}

test("the import check catches Node-only imports, static, dynamic and re-exported", () => {
  const sample = [
    'import { readFileSync } from "node:fs";',
    'import crypto from "crypto";',
    'export { inspect } from "node:util";',
    'const os = await import("os");',
    'import { jetstream } from "@nats-io/jetstream";',
    'import { x } from "./local.js";',
  ].join("\n");
  assert.deepEqual(forbiddenImports(sample, ALLOWED_PACKAGES), ["node:fs", "crypto", "node:util", "os"]);
});

test("the shipped modules import nothing Node-only, only nats.js and each other", () => {
  const files = readdirSync(DIST);
  assert.ok(files.includes("index.js") && files.includes("index.d.ts"), files.join(", "));
  for (const file of files) {
    const source = readFileSync(join(DIST, file), "utf8");
    const allowed = file.endsWith(".d.ts") ? ALLOWED_IN_DECLARATIONS : ALLOWED_PACKAGES;
    assert.deepEqual(forbiddenImports(source, allowed), [], `dist/${file}`);
    // No Node globals either (the sources compile with no Node types; this keeps it so).
    if (file.endsWith(".js")) assert.doesNotMatch(source, /\b(process|Buffer|require)\s*[.(]/, `dist/${file}`);
  }
});

test("dist/ is what src/ compiles to (run `npm run build` in clients/typescript after a change)", () => {
  const out = mkdtempSync(join(tmpdir(), "ts-client-dist-"));
  try {
    try {
      execFileSync(process.execPath, [join(PACKAGE, "node_modules/typescript/bin/tsc"), "-p", join(PACKAGE, "tsconfig.json"),
        "--outDir", out], { cwd: PACKAGE, stdio: "pipe" });
    } catch (err) {
      // tsc reports on stdout: say what does not compile (a contract kind without its method, say).
      assert.fail(`src/ does not compile:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
    }
    const built = readdirSync(out).sort();
    assert.deepEqual(readdirSync(DIST).sort(), built);
    for (const file of built) {
      assert.equal(readFileSync(join(DIST, file), "utf8"), readFileSync(join(out, file), "utf8"), `dist/${file} is stale`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the package's public names load from its entry point", async () => {
  const api = await import("@memory-worker/client");
  for (const name of ["MemoryClient", "lookupOutcome", "ResultTimeout", "CommandDeadLettered", "CacheNode",
    "encodeToken", "decodeToken", "commandSubject", "resultSubject", "savedSubject", "evictedSubject",
    "removedSubject", "invalidateSubject"]) {
    assert.equal(typeof api[name], "function", name);
  }
  assert.equal(typeof api.MemoryClient.start, "function");
  assert.equal(typeof api.CacheNode.start, "function");
});

test("encodeToken and the subject builders write what the contract's tokenEncoding says", async () => {
  const { encodeToken, decodeToken, commandSubject, resultSubject, invalidateSubject } = await import("@memory-worker/client");
  // Vectors from contracts/subjects.py's encode_token.
  const vectors = [["123456789012345678", "123456789012345678"], ["pk:abc-DEF_1", "pk:abc-DEF_1"],
    ["a.b", "a%2Eb"], ["a b*>", "a%20b%2A%3E"], ["é", "%C3%A9"], ["🦦", "%F0%9F%A6%A6"], ["%41", "%2541"]];
  for (const [id, token] of vectors) {
    assert.equal(encodeToken(id), token, id);
    assert.equal(decodeToken(token), id, token);
  }
  assert.equal(decodeToken("a%2eb"), "a.b");
  assert.throws(() => encodeToken(""), /non-empty/);
  assert.equal(commandSubject("seed_bio", "w.1"), "memory.seed_bio.w%2E1");
  assert.equal(resultSubject("w", "c 1"), "memory.result.w.c%201");
  assert.equal(invalidateSubject("user", "pk:x"), "cache.invalidate.user.pk:x");
});

test("a bot installs the packed package (npm pack, then npm install of the tarball), imports it and type-checks against it", () => {
  const bot = mkdtempSync(join(tmpdir(), "ts-client-bot-"));
  try {
    writeFileSync(join(bot, "package.json"), JSON.stringify({ name: "a-bot", private: true, type: "module" }));
    // As the README says; the registry is only asked for nats.js (npm's cache usually has it).
    const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", bot, PACKAGE], { cwd: bot, encoding: "utf8" });
    const tarball = packed.trim().split("\n").at(-1);
    execFileSync("npm", ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund",
      "--loglevel=error", `./${tarball}`], { cwd: bot, stdio: "pipe" });
    writeFileSync(join(bot, "bot.ts"), [
      'import type { NatsConnection } from "@nats-io/nats-core";',
      'import { CacheNode, MemoryClient, isInvalidCommand, lookupOutcome, type CommandResult, type ManualResult } from "@memory-worker/client";',
      "export async function save(nc: NatsConnection): Promise<[CommandResult, ManualResult, number]> {",
      "  const memory = await MemoryClient.start(nc, { timeoutMs: 5000 });",
      '  const created = await memory.create({ workspace_id: "1", bot_user_id: "2", channel: { id: "3" },',
      '    persona: { id: 1, lineage_id: 1, name: "Tomori" }, tool_args: { memory_content: "x", memory_scope: "server_wide" } });',
      '  const edited = await memory.manual({ workspace_id: "1", actor: { id: "4" }, scope: "server", action: "add",',
      '    lineage_id: 1, content: "y" });',
      "  // manual's answer is ManualResult | InvalidCommandResult: the guard narrows it.",
      "  if (isInvalidCommand(edited)) throw new Error(edited.data.reason);",
      "  // Any kind by its subject token, typed by the contract: the command and the reply are the kind's.",
      '  const reinforced = await memory.send("reinforce", { workspace_id: "1", lineage_id: 1, memories: [] });',
      "  if (!isInvalidCommand(reinforced) && reinforced.data.status !== \"reinforced\") throw new Error();",
      "  // @ts-expect-error: a seed_bio's command is not a reinforce's",
      '  await memory.send("seed_bio", { workspace_id: "1", lineage_id: 1, memories: [] });',
      '  const outcome = await lookupOutcome(nc, "1", created.command_id);',
      "  // Shadow mode: an own write in the result shape is reported as it is; any other says what to report.",
      '  const own = await memory.shadowed("manual", { workspace_id: "1", actor: { id: "4" }, scope: "server", action: "add",',
      '    lineage_id: 1, content: "y" }, async () => ({ success: true, data: { status: "added" } }));',
      '  const count: number = await memory.shadowed("reinforce", { workspace_id: "1", lineage_id: 1, memories: [] },',
      '    async () => 2, { report: (n) => ({ data: { status: "reinforced", count: n } }), timeoutMs: 100 });',
      "  await memory.shadowReportsSent();",
      "  if (!own.success || count !== 2) throw new Error();",
      '  const cache = await CacheNode.start(nc, { name: "bot" });',
      '  const n = await cache.getOrLoad("user", "4", async () => 1);',
      '  return [created, edited, n + (outcome === null ? 0 : 1)];',
      "}",
    ].join("\n"));
    execFileSync(process.execPath, [join(PACKAGE, "node_modules/typescript/bin/tsc"), "--strict", "--noEmit",
      "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom",
      "--skipLibCheck", "bot.ts"], { cwd: bot, stdio: "pipe" });
    const loaded = execFileSync(process.execPath, ["--input-type=module", "-e",
      'const m = await import("@memory-worker/client"); console.log(typeof m.MemoryClient.start, typeof m.CacheNode.start);'],
      { cwd: bot, encoding: "utf8" });
    assert.equal(loaded.trim(), "function function");
  } catch (err) {
    assert.fail(`${err.message}\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  } finally {
    rmSync(bot, { recursive: true, force: true });
  }
});
