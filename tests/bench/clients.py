"""`make bench-clients`: the TypeScript client (@memory-worker/client) against the Python
MemoryClient on the same worker, at the same number of commands in flight: creates/s and
p50/p99 latency of each, and their ratios.

Starts its own embedded servers (durable settings, as `make run`) and a worker, unless given
--nats-url of a running worker. The two clients take turns (--rounds, each a fresh set of
workspaces) so a drift of the machine's load falls on both; the figures are medians over rounds.
Writes tests/bench/results/clients-<date>.json and prints a Markdown table for tests/bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import time

import nats

from tests.bench.own_worker import finish, own_worker
from tests.conftest import ROOT
from tests.support.commands import create_fields
from worker.client.memory_client import MemoryClient, new_create

NODE_SCRIPT = ROOT / "clients" / "typescript" / "bench" / "creates.mjs"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _command(i: int, workspaces: int, first_workspace: int):
    return new_create(**create_fields(str(first_workspace + i % workspaces), f"fact number {i} about the server",
                                      lineage_id=1 + i % 3, bot_user_id="100000000000000001",
                                      channel={"id": "200000000000000001"}))


async def python_round(nats_url: str, commands: int, in_flight: int, workspaces: int, first: int) -> dict:
    nc = await nats.connect(nats_url)
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    async with MemoryClient(nc, timeout=60) as client:
        async def run(start: int, count: int) -> None:
            queue = iter(range(start, start + count))

            async def sender() -> None:
                for i in queue:
                    began = time.perf_counter()
                    result = await client.create(_command(i, workspaces, first))
                    latencies.append((time.perf_counter() - began) * 1000)
                    statuses[result.data.status] = statuses.get(result.data.status, 0) + 1
            await asyncio.gather(*(sender() for _ in range(in_flight)))

        await run(commands, 50)  # warm-up, as the node side does
        latencies.clear()
        statuses.clear()
        began, cpu_before = time.perf_counter(), time.process_time()
        await run(0, commands)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu_before
    await nc.close()
    # This process is the client (and nats-py) alone: the worker and the servers run apart.
    return {"elapsed_s": elapsed, "latencies_ms": latencies, "statuses": statuses,
            "cpu_ms_per_create": cpu * 1000 / commands}


def typescript_round(nats_url: str, commands: int, in_flight: int, workspaces: int, first: int) -> dict:
    node = shutil.which("node")
    if node is None:
        raise SystemExit("bench-clients needs Node.js 20+ (and `npm ci` in clients/typescript; make does it)")
    done = subprocess.run([node, str(NODE_SCRIPT), nats_url, str(commands), str(in_flight), str(workspaces),
                           str(first)], cwd=NODE_SCRIPT.parent.parent, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the TypeScript bench failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(rounds: list[dict]) -> dict:
    rates = [len(r["latencies_ms"]) / r["elapsed_s"] for r in rounds]
    return {"creates_per_s": statistics.median(rates), "rounds_creates_per_s": rates,
            "p50_ms": statistics.median(percentile(r["latencies_ms"], 0.50) for r in rounds),
            "p99_ms": statistics.median(percentile(r["latencies_ms"], 0.99) for r in rounds),
            "cpu_ms_per_create": statistics.median(r["cpu_ms_per_create"] for r in rounds),
            "statuses": [r["statuses"] for r in rounds]}


def compare(nats_url: str, *, commands: int, in_flight: int, workspaces: int, rounds: int) -> dict:
    by_client: dict[str, list[dict]] = {"python": [], "typescript": []}
    first = 10**17 + int(time.time()) % 10**6 * 10**6  # fresh workspaces each run
    for r in range(rounds):
        for name in ("python", "typescript") if r % 2 == 0 else ("typescript", "python"):
            first += workspaces
            if name == "python":
                by_client[name].append(asyncio.run(python_round(nats_url, commands, in_flight, workspaces, first)))
            else:
                by_client[name].append(typescript_round(nats_url, commands, in_flight, workspaces, first))
    py, ts = summary(by_client["python"]), summary(by_client["typescript"])
    return {"commands": commands, "in_flight": in_flight, "workspaces": workspaces, "rounds": rounds,
            "python": py, "typescript": ts,
            "ratios": {"creates_per_s": ts["creates_per_s"] / py["creates_per_s"],
                       "p50": ts["p50_ms"] / py["p50_ms"], "p99": ts["p99_ms"] / py["p99_ms"],
                       "cpu_per_create": ts["cpu_ms_per_create"] / py["cpu_ms_per_create"]}}


def table(report: dict) -> str:
    py, ts, ratio = report["python"], report["typescript"], report["ratios"]
    load = report.get("load_average", {})
    return "\n".join([
        f"{report['commands']} creates a round, {report['in_flight']} in flight, {report['rounds']} rounds (medians);"
        f" load average {load.get('start', ['?'])[0]} at the start on {load.get('cores', '?')} cores",
        "",
        "| client | creates/s | p50 ms | p99 ms | client CPU ms a create |",
        "|---|---:|---:|---:|---:|",
        f"| Python `MemoryClient` | {py['creates_per_s']:.0f} | {py['p50_ms']:.1f} | {py['p99_ms']:.1f}"
        f" | {py['cpu_ms_per_create']:.3f} |",
        f"| TypeScript `@memory-worker/client` | {ts['creates_per_s']:.0f} | {ts['p50_ms']:.1f} | {ts['p99_ms']:.1f}"
        f" | {ts['cpu_ms_per_create']:.3f} |",
        f"| TypeScript / Python | {ratio['creates_per_s']:.2f} | {ratio['p50']:.2f} | {ratio['p99']:.2f}"
        f" | {ratio['cpu_per_create']:.2f} |",
        "",
        "creates/s of each round: Python " + ", ".join(f"{r:.0f}" for r in py["rounds_creates_per_s"])
        + "; TypeScript " + ", ".join(f"{r:.0f}" for r in ts["rounds_creates_per_s"]),
    ])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=2000, help="creates a round, per client")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--nats-url", help="a running worker's NATS (its database is the worker's): no servers started")
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        nats_url = args.nats_url
        if nats_url is None:
            nats_url, _ = stack.enter_context(own_worker("memory-bench-clients-",
                                                         MEMORY_PARTITIONS=str(args.partitions)))
        load_before = os.getloadavg()
        report = compare(nats_url, commands=args.commands, in_flight=args.in_flight, workspaces=args.workspaces,
                         rounds=args.rounds)
    # Other work on the machine moves both clients' figures: the ratios are what to read.
    finish(report, "clients", load_before, write=not args.no_write)
    print(table(report))
    return report


if __name__ == "__main__":
    main()
