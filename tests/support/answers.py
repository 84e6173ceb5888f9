"""The answers of the commands a database stores, as a repeat and the result lookup get them:
rendered from each inbox row by the worker's one renderer (worker/services/stored.py), since a
create's row keeps its decision and facts, not its result. For the harnesses that check a whole
run's outcome from the database (chaos, cluster)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from db.inbox import decode_inbox_row
from worker.services.stored import answer


class _Fetches(Protocol):
    async def fetch(self, sql: str, *args: Any) -> list[Any]: ...


async def stored_answers(db: _Fetches) -> dict[str, dict[str, Any]]:
    """Every stored command's answer, decoded, by command id."""
    rows = await db.fetch("SELECT memory_stored_command(pc)::text AS stored FROM processed_commands pc")
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        stored = decode_inbox_row(row["stored"])
        out[stored.command_id] = json.loads(answer(stored).result)
    return out
