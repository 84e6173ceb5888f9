"""JSON Schema files generated from the Structs: `python -m contracts.schema` rewrites them,
and a unit test fails when they drift from the code."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from .commands import CreateMemory, Envelope, ManualMemory, ReinforceMemories, SeedBio
from .events import CacheInvalidate, MemoryEvicted, MemoryEvictionMetric, MemoryRemoved, MemorySaved
from .results import CommandResult, OpResult

SCHEMA_DIR = Path(__file__).parent / "schema"

TYPES: dict[str, type] = {
    "envelope": Envelope,
    "memory.create": CreateMemory,
    "memory.manual": ManualMemory,
    "memory.reinforce": ReinforceMemories,
    "memory.seed_bio": SeedBio,
    "result": CommandResult,
    "result.op": OpResult,
    "memory.removed": MemoryRemoved,
    "memory.saved": MemorySaved,
    "memory.evicted": MemoryEvicted,
    "cache.invalidate": CacheInvalidate,
    "metrics.memory_eviction": MemoryEvictionMetric,
}


def render(kind: type) -> str:
    return json.dumps(msgspec.json.schema(kind), indent=2, sort_keys=True) + "\n"


def expected_files() -> dict[Path, str]:
    return {SCHEMA_DIR / f"{name}.schema.json": render(kind) for name, kind in TYPES.items()}


def write() -> list[Path]:
    SCHEMA_DIR.mkdir(exist_ok=True)
    written = []
    for path, text in expected_files().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


if __name__ == "__main__":
    changed = write()
    print("\n".join(str(p) for p in changed) or "schemas up to date")
