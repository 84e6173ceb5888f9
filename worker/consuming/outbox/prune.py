"""Rows of the inbox, and of the outbox table older workers wrote, past their retention,
removed once an hour."""

from __future__ import annotations

import asyncio

import structlog

from db.repository import MemoryRepository
from worker.consuming.background import cancel_requested

log = structlog.get_logger("worker")

# Drained rows of the old outbox stay this long after publishing (the stream keeps 7 days).
OUTBOX_RETENTION_DAYS = 7
PRUNE_INTERVAL_S = 3600.0


async def prune_forever(repo: MemoryRepository, inbox_days: int) -> None:
    while not cancel_requested():
        try:
            removed = await repo.prune(inbox_days, OUTBOX_RETENTION_DAYS)
            if removed:
                log.info("pruned", rows=removed)
        except Exception as exc:
            log.warning("prune_failed", error=repr(exc))
        await asyncio.sleep(PRUNE_INTERVAL_S)
