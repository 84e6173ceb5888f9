"""`make bench-profile`: where a create's time goes, under load.

The world and command mix of `make bench` (run 2, smaller by default) through a real worker,
with PostgreSQL's pg_stat_statements and track_functions on and py-spy sampling the worker
process; then the same commands saved by the peer (figure 3 of `make bench`: the bot saving
straight to PostgreSQL) on its own copy of the database. Prints per command:

- CPU of each process (bot, worker, nats, postgres), as in `make bench`;
- PostgreSQL: statements (nested ones included) and server-side functions by time, WAL
  (records, full-page images, bytes) and rows written by table, for the worker and the peer
  side by side, with the projection of each process on a machine of its own;
- the worker: the Python functions with the most samples, self and inclusive (needs py-spy,
  in the `bench` extra).

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
from tests.bench import load, peer, report
from tests.bench.cpu import Probe
from tests.bench.database_work import PROFILE_PG_SETTINGS, Meter
from tests.bench.dataset import World, command, seed, specs
from worker.local.embedded import PostgresServer

WORKER_DB = "bench_profile"
PEER_DB = "bench_profile_peer"


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


async def _admin(pg: PostgresServer, sql: str) -> None:
    conn = await asyncpg.connect(pg.dsn())
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _worker_pass(args, root: Path, pg: PostgresServer, world: World) -> tuple[dict, Path]:
    dsn = pg.dsn(WORKER_DB)
    run = load.WorkerUnderTest(root / "worker", dsn, MEMORY_PARTITIONS=str(args.concurrency))
    await asyncio.to_thread(run.start)
    spy = None
    raw = root / "py-spy.txt"
    try:
        warm = [command(world, s) for s in specs(world, 300, seed=args.seed + 1000, prefix="warm")]
        await load.closed_loop(run.nats.url, warm, in_flight=args.in_flight, timeout=300)
        cmds = [command(world, s) for s in specs(world, args.commands, seed=args.seed, prefix="cmd")]
        meter = await Meter.start(dsn)
        try:
            if (binary := _py_spy()) is not None:
                spy = subprocess.Popen([binary, "record", "--pid", str(run.pid), "--rate", "200", "--format", "raw",
                                        "--nonblocking", "--output", str(raw)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            probe = Probe(processes={"worker": run.pid, "nats": run.nats.pid}, trees={"postgres": pg.pid}).start()
            result = await load.closed_loop(run.nats.url, cmds, in_flight=args.in_flight,
                                            timeout=120 + args.commands * 0.05)
            cpu = probe.figures(len(result.latencies_s))
        except BaseException:
            await meter.close()
            raise
        finally:
            if spy is not None:
                spy.send_signal(2)  # py-spy writes its output on SIGINT
                spy.wait(timeout=30)
        database = await meter.finish(len(result.latencies_s), top=args.top)
    finally:
        await asyncio.to_thread(run.stop)
    return {"commands_per_s": round(result.rate, 1), "answered": len(result.latencies_s),
            "statuses": result.statuses, "cpu": cpu, "database": database}, raw


async def _peer_pass(args, pg: PostgresServer, world: World) -> dict:
    dsn = pg.dsn(PEER_DB)
    saves = await peer.plan_saves(dsn, world, specs(world, args.commands, seed=args.seed, prefix="cmd"))
    meter = await Meter.start(dsn)
    try:
        probe = Probe(trees={"postgres": pg.pid}).start()
        result = await peer.run_peer(dsn, saves, cap=world.cap, concurrency=args.concurrency)
        cpu = probe.figures(len(result.latencies_s))
    except BaseException:
        await meter.close()
        raise
    return {"commands_per_s": round(len(result.latencies_s) / result.elapsed_s, 1),
            "answered": len(result.latencies_s), "statuses": result.statuses, "cpu": cpu,
            "database": await meter.finish(len(result.latencies_s), top=args.top)}


def _print_pass(name: str, section: dict) -> None:
    cpu, database = section["cpu"], section["database"]
    print(f"\n{name}: {section['answered']:,} creates at {section['commands_per_s']:.0f}/s, "
          f"statuses {section['statuses']}")
    print("CPU ms per command: " + ", ".join(
        f"{key.removesuffix('_cpu_ms_per_command')} {value}" for key, value in cpu.items()
        if key.endswith("_ms_per_command")) + f"; machine busy {cpu.get('machine_busy_share', 0):.0%}")
    print(f"\n{name}: PostgreSQL statements by time, per command (nested statements included; "
          "ms, calls, rows, WAL bytes):")
    for row in database.get("top_statements", []):
        print(f"  {row['ms']:7.3f}  calls {row['calls']:6.2f}  rows {row['rows']:6.2f}  WAL {row['wal_bytes']:7.0f}"
              f"  {'' if row['toplevel'] else '(nested) '}{row['query'][:100]}")
    if database.get("functions"):
        print(f"\n{name}: server-side functions (ms per command):")
        for row in database["functions"]:
            print(f"  self {row['self_ms']:7.3f}  total {row['total_ms']:7.3f}  calls {row['calls']:6.2f}"
                  f"  {row['name']}")
    print(f"\n{name}: WAL per command: {database['wal_records']:.1f} records, {database['wal_fpi']:.2f} full-page"
          f" images, {database['wal_bytes']:,.0f} bytes")


async def profile(args, root: Path, pg: PostgresServer) -> None:
    await _admin(pg, f"CREATE DATABASE {WORKER_DB}")
    await migrate_dsn(pg.dsn(WORKER_DB))
    world = World(args.workspaces)
    await seed(pg.dsn(WORKER_DB), world, args.rows)
    # The peer's own copy of the same data, made before the worker writes to it.
    await _admin(pg, f"CREATE DATABASE {PEER_DB} TEMPLATE {WORKER_DB} STRATEGY FILE_COPY")
    await _admin(pg, "CHECKPOINT")
    worker, raw = await _worker_pass(args, root, pg, world)
    await _admin(pg, "CHECKPOINT")
    peer_section = await _peer_pass(args, pg, world)
    _print_pass("worker", worker)
    print("\nWorker process (py-spy):")
    print("\n".join(_python_profile(raw, args.top) if raw.exists() else
                    ["  py-spy is not installed (pip install -e '.[bench]')"]))
    _print_pass("peer", peer_section)
    print()
    print("\n".join(report.database_table([("worker", worker), ("peer", peer_section)],
                                          report.database_comparison(worker, peer_section))))
    print()
    print("\n".join(report.projection_table([
        ("worker", report.projection(worker["cpu"], ("client", "worker", "nats", "postgres"))),
        ("peer", report.projection(peer_section["cpu"], ("client", "postgres")))])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=8000)
    parser.add_argument("--workspaces", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=10_000, help="existing background memory rows")
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=16, help="the worker's MEMORY_PARTITIONS")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="memory-profile-"))
    pg = PostgresServer(root / "pg", settings=PROFILE_PG_SETTINGS)
    try:
        pg.start()
        asyncio.run(profile(args, root, pg))
    finally:
        for run in list(load.LIVE):
            run.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
