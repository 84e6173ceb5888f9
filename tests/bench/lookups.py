"""`make bench-lookups`: how long one workspace's result lookup waits while a bot floods
another workspace's (worker/consuming/lookup/scheduling.py).

The attack: the bot publishes `--garbage` undecodable commands to workspace A (each becomes a
dead letter that every outcome lookup of A reads), then, in each of `--rounds` rounds, sends
`--flood` outcome lookups for A and right after them a plain lookup and an outcome lookup for
workspace B (B has no dead letters). Reported: B's wait for each answer (from its request to
its answer), and how long A's lookups took to be all answered, the median and the worst over
the rounds.

Starts its own embedded servers and worker (durable settings, as `make run`). Prints a Markdown
table for tests/bench/README.md and writes tests/bench/results/lookups-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from typing import Any

import nats
from nats.aio.client import Client

from contracts import subjects
from tests.bench.own_worker import finish, own_worker

OUTCOME = b'{"answer": "outcome"}'


async def flood_dead_letters(nc: Client, workspace: str, garbage: int, timeout: float) -> None:
    """`garbage` undecodable commands to `workspace`, until the worker has dead-lettered them all."""
    js = nc.jetstream()
    subject = subjects.command_subject("create", workspace)
    for start in range(0, garbage, 100):
        await asyncio.gather(*(js.publish(subject, b"not json", headers={"Nats-Msg-Id": uuid.uuid4().hex},
                                          stream=subjects.COMMANDS_STREAM)
                               for _ in range(start, min(start + 100, garbage))))
    deadline = time.monotonic() + timeout
    while await _dead_letters(nc, workspace) < garbage:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker dead-lettered fewer than {garbage} commands within {timeout}s")
        await asyncio.sleep(0.1)


async def _dead_letters(nc: Client, workspace: str) -> int:
    info = await nc.jetstream().stream_info(subjects.DLQ_STREAM, subjects_filter=f"dlq.memory.*.{workspace}")
    return sum((info.state.subjects or {}).values())


async def _timed(nc: Client, subject: str, body: bytes, timeout: float) -> float:
    """Milliseconds from the request to its answer."""
    start = time.perf_counter()
    await nc.request(subject, body, timeout=timeout)
    return (time.perf_counter() - start) * 1000


async def one_round(nc: Client, flooded: str, other: str, flood: int, timeout: float) -> dict[str, float]:
    started = time.perf_counter()
    flooding = [asyncio.create_task(_timed(nc, subjects.result_subject(flooded, f"c-{uuid.uuid4().hex}"), OUTCOME,
                                           timeout)) for _ in range(flood)]
    await nc.flush()  # A's lookups are on their way before B asks
    plain = asyncio.create_task(_timed(nc, subjects.result_subject(other, f"c-{uuid.uuid4().hex}"), b"", timeout))
    outcome = asyncio.create_task(_timed(nc, subjects.result_subject(other, f"c-{uuid.uuid4().hex}"), OUTCOME,
                                         timeout))
    b_plain, b_outcome = await plain, await outcome
    await asyncio.gather(*flooding)
    return {"b_plain_ms": b_plain, "b_outcome_ms": b_outcome,
            "a_all_answered_ms": (time.perf_counter() - started) * 1000}


async def measure(nats_url: str, garbage: int, flood: int, rounds: int, timeout: float) -> dict[str, Any]:
    nc = await nats.connect(nats_url)
    try:
        flooded, other = f"flooded-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
        await flood_dead_letters(nc, flooded, garbage, timeout)
        results = [await one_round(nc, flooded, other, flood, timeout) for _ in range(rounds)]
    finally:
        await nc.drain()
    return {"garbage": garbage, "flood": flood, "rounds": rounds,
            **{name: {"median": statistics.median(r[name] for r in results), "max": max(r[name] for r in results)}
               for name in ("b_plain_ms", "b_outcome_ms", "a_all_answered_ms")}}


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['garbage']} dead letters in A, {report['flood']} outcome lookups for A, "
             f"{report['rounds']} rounds", "", "| wait (ms) | median | max |", "| --- | ---: | ---: |"]
    for name, label in (("b_plain_ms", "B's plain lookup"), ("b_outcome_ms", "B's outcome lookup"),
                        ("a_all_answered_ms", "all of A's lookups")):
        lines.append(f"| {label} | {report[name]['median']:,.1f} | {report[name]['max']:,.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--garbage", type=int, default=1000, help="dead letters the flooded workspace gets")
    parser.add_argument("--flood", type=int, default=20, help="outcome lookups for it per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds any one step may take")
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)
    with own_worker("memory-bench-lookups-") as (nats_url, _):
        load_before = os.getloadavg()
        report = asyncio.run(measure(nats_url, args.garbage, args.flood, args.rounds, args.timeout))
    finish(report, "lookups", load_before, write=not args.no_write)
    print(table(report))
    return report


if __name__ == "__main__":
    main()
