"""Inbox rows past their retention (INBOX_RETENTION_DAYS), removed once an hour."""

from __future__ import annotations

import asyncio

import structlog

from db.repository import MemoryRepository
from worker.consuming.background import cancel_requested

log = structlog.get_logger("worker")

PRUNE_INTERVAL_S = 3600.0
# Rows one statement removes at most: each batch is a short transaction, so the prune never
# holds a long one against the creates.
PRUNE_BATCH = 5000


async def prune_due(repo: MemoryRepository, inbox_days: int, batch: int = PRUNE_BATCH) -> int:
    """Remove every row past its retention, a batch at a time, until a batch comes back short.
    One batch an hour would fall behind any inbox taking more than a batch an hour (about
    1.4 commands a second), which would then grow without bound."""
    removed = 0
    while True:
        pruned = await repo.prune(inbox_days, batch)
        removed += pruned
        if pruned < batch or cancel_requested():
            return removed


async def prune_forever(repo: MemoryRepository, inbox_days: int) -> None:
    while not cancel_requested():
        try:
            removed = await prune_due(repo, inbox_days)
            if removed:
                log.info("pruned", rows=removed)
        except Exception as exc:
            log.warning("prune_failed", error=repr(exc))
        await asyncio.sleep(PRUNE_INTERVAL_S)
