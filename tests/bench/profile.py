"""`make bench-profile`: where a create's time goes, under load.

The world and command mix of `make bench` (run 2, smaller by default) through a real worker,
with PostgreSQL's pg_stat_statements and track_functions on and py-spy sampling the worker
process, then prints per command:

- CPU of each process (bot, worker, nats, postgres), as in `make bench`;
- PostgreSQL: statements and server-side functions by time, and WAL (records, full-page
  images, bytes);
- the worker: the Python functions with the most samples, self and inclusive (needs py-spy,
  in the `bench` extra);
- with `--peer`, the same for the peer of `make bench` (a bot saving straight to PostgreSQL:
  count, then insert) on a database seeded alike: PostgreSQL CPU and WAL per save, the
  issue's yardsticks for the worker's share of the database.

The counters add their own overhead (statement timing most of all): compare shares within a
profile, and take rates from `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import asyncpg

from db.migrate import migrate_dsn
from tests.bench import load, peer
from tests.bench.cpu import Probe
from tests.bench.dataset import World, command, seed, specs
from worker.local.embedded import PostgresServer

PROFILED_PG = {"shared_preload_libraries": "pg_stat_statements", "track_functions": "all",
               "pg_stat_statements.track": "all"}


def _py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return found if Path(found).exists() else None


def _python_profile(raw: Path, top: int) -> list[str]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    if not total:
        return ["  (no samples)"]
    out = [f"  {total} samples; self:"]
    out += [f"  {n / total:6.1%}  {frame[:130]}" for frame, n in own.most_common(top)]
    out.append("  inclusive:")
    out += [f"  {n / total:6.1%}  {frame[:130]}" for frame, n in inclusive.most_common(top)]
    return out


async def profile(args, root: Path, pg: PostgresServer) -> None:
    dsn = pg.dsn()
    await migrate_dsn(dsn)
    world = World(args.workspaces)
    await seed(dsn, world, args.rows)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; CHECKPOINT")
        run = load.WorkerUnderTest(root / "worker", dsn, MEMORY_PARTITIONS=str(args.concurrency))
        await asyncio.to_thread(run.start)
        spy = None
        try:
            warm = [command(world, s) for s in specs(world, 300, seed=args.seed + 1000, prefix="warm")]
            await load.closed_loop(run.nats.url, warm, in_flight=args.in_flight, timeout=300)
            await conn.execute("SELECT pg_stat_statements_reset(); SELECT pg_stat_reset();"
                               " SELECT pg_stat_reset_shared('wal')")
            cmds = [command(world, s) for s in specs(world, args.commands, seed=args.seed, prefix="cmd")]
            raw = root / "py-spy.txt"
            if (binary := _py_spy()) is not None:
                spy = subprocess.Popen([binary, "record", "--pid", str(run.pid), "--rate", "200", "--format", "raw",
                                        "--nonblocking", "--output", str(raw)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            probe = Probe(processes={"worker": run.pid, "nats": run.nats.pid}, trees={"postgres": pg.pid}).start()
            result = await load.closed_loop(run.nats.url, cmds, in_flight=args.in_flight,
                                            timeout=120 + args.commands * 0.05)
            cpu = probe.figures(len(result.latencies_s))
        finally:
            if spy is not None:
                spy.send_signal(2)  # py-spy writes its output on SIGINT
                spy.wait(timeout=30)
            await asyncio.to_thread(run.stop)
        n = max(1, len(result.latencies_s))
        print(f"\n{len(result.latencies_s):,} creates at {result.rate:.0f}/s, statuses {result.statuses}")
        print("CPU ms per command: " + ", ".join(
            f"{key.removesuffix('_cpu_ms_per_command')} {value}" for key, value in cpu.items()
            if key.endswith("_ms_per_command")) + f"; machine busy {cpu.get('machine_busy_share', 0):.0%}")
        print("\nPostgreSQL statements by time (ms per command; nested statements included):")
        for row in await conn.fetch(
                "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS q"
                " FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT $1", args.top):
            print(f"  {row['total_exec_time'] / n:7.3f}  calls {row['calls']:7,}  {row['q']}")
        print("\nServer-side functions (ms per command):")
        for row in await conn.fetch("SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions"
                                    " WHERE calls > 1 ORDER BY self_time DESC LIMIT $1", args.top):
            print(f"  self {row['self_time'] / n:7.3f}  total {row['total_time'] / n:7.3f}  calls {row['calls']:7,}"
                  f"  {row['funcname']}")
        wal = await conn.fetchrow("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal")
        print(f"\nWAL per command: {wal['wal_records'] / n:.1f} records, {wal['wal_fpi'] / n:.2f} full-page images,"
              f" {int(wal['wal_bytes']) / n:,.0f} bytes")
        print("\nWorker process (py-spy):")
        print("\n".join(_python_profile(raw, args.top) if raw.exists() else
                        ["  py-spy is not installed (pip install -e '.[bench]')"]))
    finally:
        await conn.close()


async def profile_peer(args, pg: PostgresServer) -> None:
    admin = await asyncpg.connect(pg.dsn())
    try:
        await admin.execute("CREATE DATABASE peer")
    finally:
        await admin.close()
    dsn = pg.dsn("peer")
    await migrate_dsn(dsn)
    world = World(args.workspaces)
    await seed(dsn, world, args.rows)
    saves = await peer.plan_saves(dsn, world, specs(world, args.commands, seed=args.seed, prefix="cmd"))
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CHECKPOINT; SELECT pg_stat_reset_shared('wal')")
        probe = Probe(trees={"postgres": pg.pid}).start()
        result = await peer.run_peer(dsn, saves, cap=world.cap, concurrency=args.concurrency)
        n = max(1, len(result.latencies_s))
        cpu = probe.figures(n)
        wal = await conn.fetchrow("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal")
    finally:
        await conn.close()
    print(f"\nPeer: {n:,} saves at {n / result.elapsed_s:.0f}/s, statuses {dict(result.statuses)}")
    print(f"  PostgreSQL CPU ms per save: {cpu.get('postgres_cpu_ms_per_command')}")
    print(f"  WAL per save: {wal['wal_records'] / n:.1f} records, {wal['wal_fpi'] / n:.2f} full-page images,"
          f" {int(wal['wal_bytes']) / n:,.0f} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=8000)
    parser.add_argument("--workspaces", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=10_000, help="existing background memory rows")
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=16, help="the worker's MEMORY_PARTITIONS")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer", action="store_true", help="then profile the peer on a database seeded alike")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="memory-profile-"))
    pg = PostgresServer(root / "pg", settings=PROFILED_PG)
    try:
        pg.start()
        asyncio.run(profile(args, root, pg))
        if args.peer:
            asyncio.run(profile_peer(args, pg))
    finally:
        for run in list(load.LIVE):
            run.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
