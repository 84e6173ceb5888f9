"""Where the running `make run`s are: their servers' URLs and pid, recorded per data directory and
per user, so that memoryctl finds one from any directory.

`memoryctl run` writes `<data dir>/endpoints.json` and a copy in the user's state directory
($XDG_STATE_HOME/memory-worker/runs/, default ~/.local/state/...), one file per pid, and
removes both when it ends. A record whose pid is no longer a live memoryctl is stale (a SIGKILL
leaves it) and is ignored, and the user-level one is removed when read.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

RECORD = "endpoints.json"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "memory-worker" / "runs"


def _live(path: Path) -> dict[str, Any] | None:
    from worker.local.processes import process_alive

    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    pid = found.get("pid") if isinstance(found, dict) else None
    if not isinstance(pid, int) or pid == os.getpid() or not process_alive(pid, "memoryctl"):
        return None  # left by a process that is gone: its servers went with it (or are leftovers)
    return cast(dict[str, Any], found)


def in_data_dir(data_dir: Path) -> dict[str, Any] | None:
    """What a live memoryctl recorded of the servers it runs on this data directory."""
    return _live(data_dir / RECORD)


def for_user() -> list[dict[str, Any]]:
    """Every live `make run` of this user, wherever it was started; stale records are removed."""
    found = []
    for path in sorted(state_dir().glob("*.json")):
        if (record := _live(path)) is None:
            with contextlib.suppress(OSError):
                path.unlink()
        else:
            found.append(record)
    return found


@contextlib.contextmanager
def recording(data_dir: Path, nats_url: str | None, database_url: str) -> Iterator[None]:
    """Record this process's servers for the other subcommands while the block runs."""
    record = {"nats_url": nats_url, "database_url": database_url, "pid": os.getpid(), "data_dir": str(data_dir)}
    text = json.dumps({k: v for k, v in record.items() if v})
    paths = [data_dir / RECORD, state_dir() / f"{os.getpid()}.json"]
    (data_dir / RECORD).write_text(text)
    try:
        paths[1].parent.mkdir(parents=True, exist_ok=True)
        paths[1].write_text(text)
    except OSError:
        paths.pop()  # no writable home: found from its own data directory only, as before
    try:
        yield
    finally:
        for path in paths:
            path.unlink(missing_ok=True)
