"""The worker's database pool: its timeouts from the settings, and a close that a database
gone away cannot hold up."""

from __future__ import annotations

import asyncio

import asyncpg
import structlog

from db.connection import Timeouts
from worker.shared.settings import Settings

log = structlog.get_logger("worker")

# How long the pool's connections get to close politely at the end; a database that is away
# answers nothing, and the connections are then dropped.
POOL_CLOSE_S = 5.0


def timeouts_from(settings: Settings) -> Timeouts:
    return Timeouts(connect_s=float(settings.db_connect_timeout_seconds),
                    command_s=float(settings.db_command_timeout_seconds))


async def close_pool(pool: asyncpg.Pool) -> None:
    try:
        await asyncio.wait_for(pool.close(), POOL_CLOSE_S)
    except (TimeoutError, asyncio.TimeoutError):  # close() terminates the connections left when cut short
        log.warning("database_pool_close_timed_out", note="connections dropped: the database did not answer")
