"""Where each command's time went under load, from the worker's canonical log lines.

The worker logs, per command, how long it waited in the stream (`queued_ms`, from the
moment JetStream stored it), its handler's time (`duration_ms`) and two parts of it: the
database (`db_ms`: the service's round trips and the planning between them) and storing
the events (`events_ms`). What the bot measured, from each command's scheduled send time to
its result, less the queue and the handler, is the rest: the bot's publish until JetStream
stored the command (any lateness of the sender and any wait for a batch included), and the
result's way back.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.bench.report import percentile
from tests.support.logs import log_events

PARTS = ("publish_and_reply", "queued", "db", "events", "handler")


def _canonical_lines(log_path: Path, ids: set[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for entry in log_events(log_path.read_text(errors="replace"), "command"):
        if entry.get("command_id") in ids and "db_ms" in entry:
            found[entry["command_id"]] = entry
    return found


def where_the_time_went(log_path: Path, latency_s_by_id: dict[str, float], *, wait_s: float = 5.0) -> dict:
    """How many answered commands were found in the log, and p50 and p99 of each part over
    them ({"commands", "answered", "parts": {part: {"p50", "p99"}}}). The worker writes a
    command's line after its reply, so the last few may still be on their way: wait a little."""
    ids = set(latency_s_by_id)
    deadline = time.monotonic() + wait_s
    lines = _canonical_lines(log_path, ids)
    while len(lines) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.2)
        lines = _canonical_lines(log_path, ids)
    parts: dict[str, list[float]] = {part: [] for part in PARTS}
    for command_id, entry in lines.items():
        queued, handler = entry.get("queued_ms") or 0.0, entry["duration_ms"]
        parts["publish_and_reply"].append(max(0.0, latency_s_by_id[command_id] * 1000 - queued - handler))
        parts["queued"].append(queued)
        parts["db"].append(entry["db_ms"])
        parts["events"].append(entry["events_ms"])
        parts["handler"].append(handler)
    for values in parts.values():
        values.sort()
    return {"commands": len(lines), "answered": len(ids), "parts": {
        part: {"p50": round(percentile(values, 0.5), 2), "p99": round(percentile(values, 0.99), 2)} if values else {}
        for part, values in parts.items()}}
