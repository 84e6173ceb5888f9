// What the node tests share: the environment tests/e2e/test_e2e_typescript_client.py gives
// them (the running worker's NATS, its database, a fixture of prepared workspaces), and
// servers of their own for the tests that kill a worker or restart NATS.
import { connect } from "@nats-io/transport-node";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export function env(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: these tests run from tests/e2e/test_e2e_typescript_client.py (make test)`);
  }
  return value;
}

let cachedFixture;
/** The workspaces and the conversation pytest prepared for this run. */
export function fixture() {
  cachedFixture ??= JSON.parse(readFileSync(env("MEMORY_FIXTURE"), "utf8"));
  return cachedFixture;
}

export const connectTo = (url, options = {}) => connect({ servers: url, ...options });

/** A pool on a database, with the worker's schema first (as the DSN's options say). */
export function database(url) {
  return new pg.Pool({ connectionString: url, max: 3 });
}

/** Poll `probe` until it returns something truthy, at most `timeoutMs`. */
export async function waitFor(probe, { timeoutMs = 20_000, what = "the condition", everyMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, child, what, timeoutMs = 30_000) {
  await waitFor(() => new Promise((resolve, reject) => {
    if (child.exitCode !== null) {
      reject(new Error(`${what} exited early (${child.exitCode})`));
      return;
    }
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => { socket.destroy(); resolve(true); });
    socket.once("error", () => resolve(false));
  }), { timeoutMs, what: `${what} on port ${port}` });
}

/** A nats-server with JetStream of our own, in a temp dir; restart() keeps its port and data. */
export async function startNats() {
  const dir = mkdtempSync(join(tmpdir(), "ts-client-nats-"));
  const port = await freePort();
  const conf = join(dir, "nats.conf");
  writeFileSync(conf, `listen: "127.0.0.1:${port}"\nmax_payload: 1MB\njetstream {\n  store_dir: "${join(dir, "js")}"\n  sync_interval: always\n}\n`);
  const server = {
    url: `nats://127.0.0.1:${port}`,
    child: null,
    async start() {
      this.child = spawn(env("NATS_SERVER_BIN"), ["-c", conf, "-l", join(dir, "nats.log")], { stdio: "ignore" });
      await waitForPort(port, this.child, "nats-server");
      return this;
    },
    async stop() {
      const child = this.child;
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      this.child = null;
    },
    async restart() {
      await this.stop();
      await this.start();
    },
    async dispose() {
      await this.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server.start();
}

/** `memoryctl run` as a child process on the given servers; kill() is SIGKILL, by its pid only. */
export function workerProcess({ natsUrl, databaseUrl, extra = {} }) {
  let output = "";
  return {
    child: null,
    get output() { return output; },
    async start(timeoutMs = 60_000) {
      const mark = output.length;
      this.child = spawn(env("PYTHON"), ["-m", "worker.cli.memoryctl", "run"], {
        cwd: env("REPO_ROOT"),
        env: { ...process.env, NATS_URL: natsUrl, DATABASE_URL: databaseUrl, LOG_FORMAT: "json",
          PYTHONPATH: env("REPO_ROOT"), METRICS_PORT: "0", ...extra },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const collect = (chunk) => { output += chunk; };
      this.child.stdout.on("data", collect);
      this.child.stderr.on("data", collect);
      const child = this.child;
      await waitFor(() => {
        if (child.exitCode !== null) throw new Error(`the worker exited early:\n${output.slice(-4000)}`);
        return output.slice(mark).includes("worker_ready");
      }, { timeoutMs, what: "the worker to be ready" });
      return this;
    },
    async kill(signal = "SIGKILL") {
      const child = this.child;
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill(signal);
        await exited;
      }
      this.child = null;
    },
  };
}

const BOT_ID = "990000000000000001";

/** The fields of a memory.create as the e2e suite writes them (tests/e2e/bus.py). */
export function createFields(workspaceId, content, extra = {}) {
  return {
    workspace_id: workspaceId,
    tool_args: { memory_content: content, memory_scope: "server_wide" },
    persona: { id: 1, lineage_id: 7, name: "Tomori" },
    bot_user_id: BOT_ID,
    triggerer: { id: "110000000000000001", name: "someone" },
    channel: { id: "120000000000000001", is_dm: false, is_private: false, everyone_can_view: true, url: null },
    participants: [],
    member_matches: [],
    retrieval: { rag_available: false, embedding_model: null, embedding_credentials: false },
    ...extra,
  };
}

/** The workspace's server memories, by id (tests/e2e/directory.py's server_memories). */
export async function serverMemories(db, workspaceId) {
  const { rows } = await db.query(
    `SELECT m.server_memory_id AS id, m.content FROM server_memories m JOIN servers s USING (server_id)
     WHERE s.server_disc_id = $1 ORDER BY m.server_memory_id`, [workspaceId]);
  return rows;
}
