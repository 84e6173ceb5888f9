// The TypeScript client's side of `make bench-clients` (tests/bench/clients.py): creates through
// MemoryClient at a fixed number in flight, after a short warm-up. Prints one JSON line:
// {"elapsed_s", "latencies_ms", "statuses", "cpu_ms_per_create"}.
//   node bench/creates.mjs <nats url> <commands> <in flight> <workspaces> <first workspace>
import { connect } from "@nats-io/transport-node";
import { MemoryClient } from "@memory-worker/client";

const [url, commands, inFlight, workspaces, firstWorkspace] = process.argv.slice(2);
const n = Number(commands);
const nc = await connect({ servers: url });
const client = await MemoryClient.start(nc, { timeoutMs: 60_000 });
const statuses = {};
let latencies = [];

function command(i) {
  return {
    workspace_id: String(BigInt(firstWorkspace) + BigInt(i % Number(workspaces))),
    persona: { id: 1, lineage_id: 1 + (i % 3), name: "Tomori" },
    bot_user_id: "100000000000000001",
    // The person tests/support/directory.py registers in every test database: a create needs a
    // triggerer the bot knows (TomoriBot's critical state).
    triggerer: { id: "110000000000000001", name: "someone" },
    channel: { id: "200000000000000001" },
    tool_args: { memory_content: `fact number ${i} about the server`, memory_scope: "server_wide" },
  };
}

async function run(from, count) {
  let next = from;
  const end = from + count;
  await Promise.all(Array.from({ length: Number(inFlight) }, async () => {
    while (next < end) {
      const i = next++;
      const started = performance.now();
      const result = await client.create(command(i));
      latencies.push(performance.now() - started);
      statuses[result.data.status] = (statuses[result.data.status] ?? 0) + 1;
    }
  }));
}

await run(n, 50); // warm-up: connection set-up is not measured
latencies = [];
for (const k of Object.keys(statuses)) delete statuses[k];
const started = performance.now();
const cpuBefore = process.cpuUsage();
await run(0, n);
const cpu = process.cpuUsage(cpuBefore);
const elapsed = (performance.now() - started) / 1000;
await client.close();
await nc.close();
// The client's own CPU (this process: the client and nats.js), per create.
console.log(JSON.stringify({ elapsed_s: elapsed, latencies_ms: latencies, statuses,
  cpu_ms_per_create: (cpu.user + cpu.system) / 1000 / n }));
