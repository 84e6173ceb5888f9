"""`make bench-shadow`: what shadow mode costs (docs/design.md, section 3.6).

1. **WAL per command**, read from pg_current_wal_insert_lsn() around a run of creates of one
   sort at a time, on a quiet database: a real create; a dry run (its shadow record included);
   the shadow record alone (the same rows inserted again by the same statement, on their own);
   a report (the UPDATE that pairs it). A dry run's bytes against the record's alone are what
   it writes beyond it.
2. **The bot's added latency per shadowed call**: a bot's own write (an INSERT into
   server_memories on its own connection, as TomoriBot writes) timed alone and inside
   MemoryClient.shadowed(), one call at a time, alternated; the difference of the medians and
   of the 99th percentiles.

Starts its own embedded servers and worker (durable settings, as `make run`). Prints a Markdown
table for tests/bench/README.md and writes tests/bench/results/shadow-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from typing import Any

import asyncpg
import msgspec
import nats

from tests.bench.clients import percentile
from tests.bench.own_worker import finish, own_worker
from tests.support.commands import create_fields, shadow_fields
from worker.client.memory_client import MemoryClient, new_create


def _create(workspace: str, i: int, *, dry: bool = False):
    cmd = new_create(**create_fields(workspace, f"fact number {i} about the server and its tea", lineage_id=1,
                                     bot_user_id="100000000000000001", channel={"id": "200000000000000001"}))
    return msgspec.structs.replace(cmd, dry_run=dry)


async def _lsn(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))


async def wal_per_command(nats_url: str, dsn: str, count: int) -> dict[str, float]:
    """WAL bytes per command of each sort, `count` of each, one at a time (nothing else runs)."""
    conn = await asyncpg.connect(dsn)
    nc = await nats.connect(nats_url)
    out: dict[str, float] = {}
    try:
        async with MemoryClient(nc, timeout=60) as client:
            kept: list[str] = []  # the dry runs' command ids
            for sort, dry in (("real create", False), ("dry run of a create (with its shadow record)", True)):
                workspace = str(900_000_000_000_000_000 + (0 if dry else 1))
                await client.create(_create(workspace, -1, dry=dry))  # the workspace and its plans warmed
                commands = [_create(workspace, i, dry=dry) for i in range(count)]
                before = await _lsn(conn)
                for cmd in commands:
                    await client.create(cmd)
                out[sort] = (await _lsn(conn) - before) / count
                if dry:
                    kept = [cmd.command_id for cmd in commands]
            copies = [uuid.uuid4().hex for _ in kept]
            before = await _lsn(conn)
            for copy, original in zip(copies, kept, strict=True):  # the same row a dry run stores, alone
                await conn.execute(
                    "INSERT INTO memory_worker.shadow_pairs (command_id, tenant, kind, workspace_id, dry_status,"
                    " dry_result, dry_at, intended) SELECT $1, tenant, kind, workspace_id, dry_status, dry_result,"
                    " now(), intended FROM memory_worker.shadow_pairs WHERE command_id = $2"
                    " ON CONFLICT (command_id) DO NOTHING", copy, original)
            out["the shadow record alone (the same INSERT)"] = (await _lsn(conn) - before) / count
            before = await _lsn(conn)
            for command_id in kept:
                await client.shadow({"workspace_id": "900000000000000001", **shadow_fields(
                    command_id, result={"success": True, "data": {"status": "memory_saved_successfully"}})})
            out["a report, paired (its UPDATE)"] = (await _lsn(conn) - before) / count
    finally:
        await nc.drain()
        await conn.close()
    return out


async def added_latency(nats_url: str, dsn: str, calls: int, timeout: float) -> dict[str, Any]:
    """The bot's own write alone, and shadowed, alternated: milliseconds per call."""
    bot = await asyncpg.connect(dsn)
    nc = await nats.connect(nats_url)
    server_id = await bot.fetchval("INSERT INTO servers (server_disc_id) VALUES ('900000000000000009')"
                                   " ON CONFLICT (server_disc_id) DO UPDATE SET server_disc_id = excluded.server_disc_id"
                                   " RETURNING server_id")
    alone: list[float] = []
    shadowed: list[float] = []
    timed_out = 0
    try:
        async with MemoryClient(nc, timeout=60) as client:
            async def own_write(i: int) -> dict[str, Any]:
                memory_id = await bot.fetchval(
                    "INSERT INTO server_memories (server_id, persona_lineage_id, content, source) VALUES ($1, 1, $2,"
                    " 'model') RETURNING server_memory_id", server_id, f"the bot's own fact {i}")
                return {"success": True, "data": {"status": "memory_saved_successfully", "memory_id": memory_id}}

            for i in range(calls):
                began = time.perf_counter()
                await own_write(i)
                alone.append((time.perf_counter() - began) * 1000)
                cmd = _create("900000000000000009", i)
                began = time.perf_counter()
                await client.shadowed("create", cmd, lambda i=i: own_write(i), timeout=timeout)
                shadowed.append((time.perf_counter() - began) * 1000)
            await client.shadow_reports_sent()
        timed_out = await bot.fetchval("SELECT count(*) FROM memory_worker.shadow_pairs WHERE outcome = 'timed_out'")
    finally:
        await nc.drain()
        await bot.close()
    return {
        "calls": calls, "timeout_ms": timeout * 1000, "timed_out": timed_out,
        "own_write_ms": {"p50": statistics.median(alone), "p99": percentile(alone, 0.99)},
        "shadowed_ms": {"p50": statistics.median(shadowed), "p99": percentile(shadowed, 0.99)},
        "added_ms": {"p50": statistics.median(shadowed) - statistics.median(alone),
                     "p99": percentile(shadowed, 0.99) - percentile(alone, 0.99)},
    }


def table(report: dict[str, Any]) -> str:
    wal = report["wal_bytes_per_command"]
    lines = ["| WAL per command (bytes) | |", "| --- | ---: |"]
    lines += [f"| {sort} | {value:,.0f} |" for sort, value in wal.items()]
    latency = report["latency"]
    lines += ["", f"| one call at a time, {latency['calls']} calls (ms) | p50 | p99 |", "| --- | ---: | ---: |"]
    for name, key in (("the bot's own write alone", "own_write_ms"), ("the same write, shadowed", "shadowed_ms"),
                      ("added by shadow mode", "added_ms")):
        lines.append(f"| {name} | {latency[key]['p50']:.2f} | {latency[key]['p99']:.2f} |")
    lines.append(f"\ntimed out (of {latency['calls']}, at {latency['timeout_ms']:.0f} ms): {latency['timed_out']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="commands of each sort for the WAL figures")
    parser.add_argument("--calls", type=int, default=300, help="shadowed calls for the latency figures")
    parser.add_argument("--timeout", type=float, default=0.5, help="the dry run's timeout, seconds (the client's default)")
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)
    with own_worker("memory-bench-shadow-") as (nats_url, dsn):
        load_before = os.getloadavg()
        report: dict[str, Any] = {
            "wal_bytes_per_command": asyncio.run(wal_per_command(nats_url, dsn, args.count)),
            "latency": asyncio.run(added_latency(nats_url, dsn, args.calls, args.timeout)),
        }
    finish(report, "shadow", load_before, write=not args.no_write)
    print(table(report))
    return report


if __name__ == "__main__":
    main()
