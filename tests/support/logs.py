"""The worker's JSON log (LOG_FORMAT=json, one structlog entry a line) read back by the tests
and the benchmarks, the one parser of it."""

from __future__ import annotations

import json
from typing import Any


def log_events(text: str, event: str | None = None, **fields: Any) -> list[dict[str, Any]]:
    """The JSON entries of a log, in order; lines that are not JSON objects (a console line, one
    still being written) are skipped. With `event` and `fields`, only the entries that have them."""
    entries = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if event is not None and entry.get("event") != event:
            continue
        if all(entry.get(key) == value for key, value in fields.items()):
            entries.append(entry)
    return entries
