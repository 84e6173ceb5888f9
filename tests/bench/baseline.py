"""The baseline: the worker's own per-command database work, driven by pgbench.

For every command the worker makes two calls (worker/kinds/create/service.py, a batch of one):

    SELECT memory_create_contexts($1::jsonb)                      -- read what the decision needs
    SELECT * FROM memory_create_batch($1::jsonb)                  -- lock, count, evict, insert, inbox

Here the worker's own code builds each request: CreateMemoryService runs against a repository
that takes the memory_create_batch() argument instead of sending it (tests/support/planned.py),
for every command of the run. The requests go into a table of the bench database, and a
pgbench script takes the next one per transaction and makes exactly the worker's calls with
it, as parameters of prepared statements (what asyncpg does), at the worker's concurrency. The
one addition is the primary-key read of the request row, folded into the context statement
so the number of round trips stays the worker's.

Each request carries a delivery's stream sequence (`applied_by`, stored in the command's inbox
row), as the worker's do. Not included: rendering the answer and the events, and publishing
them (Python and NATS, after commit), so the baseline is the database's rate for the command's
transaction alone.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from contracts.codec import encode
from contracts.kinds.create import CreateMemory
from db.connection import SEARCH_PATH
from db.pool import create_pool
from db.requests import CreateContextRequest
from tests.bench.dataset import HISTORY_PREFIX
from tests.support.answers import stored_answers
from tests.support.planned import planned_batch
from worker.domain.targets import lookup_ids
from worker.domain.workspace import Limits
from worker.kinds.create.arguments import ToolArguments, parse_tool_args
from worker.kinds.create.record import SavePlan
from worker.local.embedded import LOOPBACK, PostgresServer


@dataclass(frozen=True, slots=True)
class Request:
    command_id: str
    contexts: str  # memory_create_contexts()'s argument, as the worker sends it
    may_evict: int  # reported (the share of plans that may evict); the SQL is the same
    body: str  # memory_create_batch()'s


async def build_requests(dsn: str, commands: list[CreateMemory], limits: Limits,
                         concurrency: int = 16) -> list[Request]:
    """The worker's two arguments for every command, built by the worker's code."""
    pool = await create_pool(dsn, min_size=1, max_size=concurrency)
    out: list[Request | None] = [None] * len(commands)
    next_index = iter(range(len(commands)))

    async def one(i: int) -> None:
        cmd = commands[i]
        batch = await planned_batch(pool, [cmd], limits, [i + 1])  # a stream sequence, as a delivery's
        (op,) = batch.ops
        if not isinstance(op.decision, SavePlan):
            raise RuntimeError(f"bench command {cmd.command_id} is refused before the save: {op.decision!r:.300}")
        args = parse_tool_args(cmd.tool_args)
        ids = list(lookup_ids(cmd, args.target if isinstance(args, ToolArguments) else None))
        contexts = encode([CreateContextRequest(cmd.command_id, cmd.workspace_id, ids, cmd.persona.lineage_id)])
        out[i] = Request(cmd.command_id, contexts.decode(), int(op.decision.may_evict), encode(batch).decode())

    async def lane() -> None:
        for i in next_index:
            await one(i)

    try:
        await asyncio.gather(*(lane() for _ in range(concurrency)))
    finally:
        await pool.close()
    return [r for r in out if r is not None]


async def store_requests(dsn: str, requests: list[Request]) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "CREATE TABLE bench_requests (i bigint PRIMARY KEY, command_id text NOT NULL, contexts text NOT NULL,"
            " may_evict integer NOT NULL, body text NOT NULL);"
            "CREATE SEQUENCE bench_next;")
        await conn.copy_records_to_table(
            "bench_requests",
            records=[(i + 1, r.command_id, r.contexts, r.may_evict, r.body)
                     for i, r in enumerate(requests)])
        await conn.execute("VACUUM ANALYZE bench_requests")
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()


# One pgbench transaction = one command, exactly as CreateMemoryService and
# MemoryRepository issue it: two autocommit statements.
SCRIPT = r"""
SELECT r.body, memory_create_contexts(r.contexts::jsonb) AS context FROM bench_requests r WHERE r.i = (SELECT nextval('bench_next')) \gset
SELECT count(*) FROM memory_create_batch(:body::jsonb);
"""


@dataclass(frozen=True, slots=True)
class PgbenchResult:
    clients: int
    threads: int
    transactions: int
    failed: int
    elapsed_s: float
    tps: float
    latencies_s: list[float]
    statuses: dict[str, int]
    output: str


async def run_pgbench(pg: PostgresServer, database: str, workdir: Path, *, clients: int,
                      per_client: int, timeout: float) -> PgbenchResult:
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "create.sql"
    script.write_text(SCRIPT)
    threads = max(1, min(clients, os.cpu_count() or 1))
    args = [str(pg.bin_dir / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", str(threads),
            "-t", str(per_client), "-f", str(script), "-l", f"--log-prefix={workdir / 'txn'}",
            "-h", LOOPBACK, "-p", str(pg.port), "-U", pg.user, database]
    started = time.perf_counter()
    # The worker's schema first, as the worker's own connections have it (db/connection.py).
    env = {**os.environ, "PGOPTIONS": "-c search_path=" + SEARCH_PATH.replace(" ", "")}
    proc = await asyncio.create_subprocess_exec(*args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, cwd=workdir, env=env)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException as exc:
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        if isinstance(exc, TimeoutError):
            raise RuntimeError(f"pgbench did not finish within {timeout:.0f}s") from None
        raise
    elapsed = time.perf_counter() - started
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"pgbench failed (exit {proc.returncode}):\n{text[-3000:]}")
    tps = _number(r"tps = ([0-9.]+) \(without initial connection time\)", text)
    processed = int(_number(r"number of transactions actually processed: (\d+)", text))
    failed_match = re.search(r"number of failed transactions: (\d+)", text)
    failed = int(failed_match.group(1)) if failed_match else 0
    latencies = []
    for log in workdir.glob("txn.*"):
        for line in log.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].isdigit():
                latencies.append(int(parts[2]) / 1e6)
    conn = await asyncpg.connect(pg.dsn(database))
    try:
        # Only this run's commands, not the history the database was seeded with; each as the
        # worker would answer it.
        answers = await stored_answers(conn)
    finally:
        await conn.close()
    statuses = Counter(a["data"]["status"] for cid, a in answers.items() if not cid.startswith(HISTORY_PREFIX))
    return PgbenchResult(clients=clients, threads=threads, transactions=processed, failed=failed,
                         elapsed_s=elapsed, tps=tps, latencies_s=latencies,
                         statuses=dict(statuses), output=text)


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"pgbench output has no {pattern!r}:\n{text[-3000:]}")
    return float(match.group(1))
