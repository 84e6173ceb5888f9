"""The worker's start-up and periodic check of the database's replication (db/replication.py):
in the log, on /metrics, and a refusal to start under REQUIRE_SYNC_STANDBY without a
synchronous standby."""

from __future__ import annotations

import asyncio

import structlog

from db import replication
from worker.consuming import metrics
from worker.shared.settings import Settings

log = structlog.get_logger("worker")

class SyncStandbyRequired(RuntimeError):
    """REQUIRE_SYNC_STANDBY=true, and the database's commits do not wait for a synchronous
    standby in sync: the worker refuses to start (exit code 2)."""


def _show_replication(state: replication.Replication) -> None:
    metrics.DATABASE_SYNC_STANDBYS.set(-1 if state.sync_standbys is None else state.sync_standbys)
    protected = state.protected
    metrics.DATABASE_COMMITS_PROTECTED.set(-1 if protected is None else int(protected))


async def check_replication(pool, settings: Settings) -> replication.Replication:
    """State, in the log and on /metrics, whether a commit survives losing the database;
    refuse to start without a synchronous standby when the deployment requires one."""
    state = await replication.read(pool)
    _show_replication(state)
    fields = dict(protected=state.protected, synchronous_commit=state.synchronous_commit,
                  synchronous_standby_names=state.standby_names, standbys=state.standbys,
                  sync_standbys=state.sync_standbys, note=state.describe())
    if settings.require_sync_standby and not state.protected:
        raise SyncStandbyRequired(f"REQUIRE_SYNC_STANDBY is set and {state.describe()}")
    (log.info if state.protected else log.warning)("database_replication", **fields)
    return state


async def watch_replication(pool, last: replication.Replication) -> None:
    """After a failover the database behind the same address may have no synchronous standby."""
    while True:
        await asyncio.sleep(replication.REFRESH_S)
        try:
            state = await replication.read(pool)
        except Exception as exc:  # the database away: its commands say so already
            log.debug("replication_check_failed", error=repr(exc))
            continue
        _show_replication(state)
        if state.protected != last.protected:
            (log.info if state.protected else log.warning)(
                "database_replication_changed", protected=state.protected, sync_standbys=state.sync_standbys,
                note=state.describe())
        last = state
