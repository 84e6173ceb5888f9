"""Whether a commit the worker acknowledges survives the loss of the database it writes to.

A save is acknowledged to the bot (and its command to JetStream) once PostgreSQL reports the
commit. With asynchronous replication that report comes before any standby has the commit:
a failover to the standby then loses it, and the sequence values it used are given again to
other memories (measured in tests/faults, schedule failover-kill-primary-async). It survives
only when the commit waited for a synchronous standby: `synchronous_standby_names` names a
standby that is connected and in sync (`pg_stat_replication.sync_state` 'sync' or 'quorum'),
and the session's `synchronous_commit` waits for it (on, remote_write or remote_apply).

The worker reads this at start-up and every REFRESH_S after, states it in its log and on
/metrics, and with REQUIRE_SYNC_STANDBY=true refuses to start without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

REFRESH_S = 30.0
# The synchronous_commit values with which a commit waits for the synchronous standbys.
WAITING_COMMITS = ("on", "remote_write", "remote_apply")

_QUERY = """
SELECT pg_is_in_recovery() AS in_recovery,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('synchronous_standby_names') AS standby_names,
       count(r.pid) AS standbys,
       count(r.pid) FILTER (WHERE r.sync_state IN ('sync', 'quorum')) AS sync_standbys,
       count(r.pid) FILTER (WHERE r.sync_state IS NULL) AS hidden
  FROM (SELECT 1) one LEFT JOIN pg_stat_replication r ON true
"""


@dataclass(frozen=True, slots=True)
class Replication:
    in_recovery: bool
    synchronous_commit: str
    standby_names: str
    standbys: int
    sync_standbys: int | None  # None: this role may not see the standbys' state (grant pg_monitor)

    @property
    def commits_wait(self) -> bool:
        """The session's commits wait for the synchronous standbys named (if any are)."""
        return bool(self.standby_names.strip()) and self.synchronous_commit in WAITING_COMMITS

    @property
    def protected(self) -> bool | None:
        """A commit reported to the worker is on a standby too; None when it cannot be told."""
        if self.in_recovery or not self.commits_wait:  # a standby takes no commit at all
            return False
        if self.sync_standbys is None:
            return None
        return self.sync_standbys > 0

    def describe(self) -> str:
        if self.in_recovery:
            return "the database is a standby in recovery (read-only): the worker needs the primary"
        if not self.standby_names.strip():
            return ("no synchronous standby is configured (synchronous_standby_names is empty): a commit is"
                    " acknowledged before any standby has it, and a failover loses it")
        if self.synchronous_commit not in WAITING_COMMITS:
            return (f"synchronous_commit is {self.synchronous_commit!r} for the worker's sessions: its commits do"
                    " not wait for the synchronous standby, and a failover can lose them")
        if self.sync_standbys is None:
            return ("synchronous standbys are configured, but this role cannot see whether one is connected"
                    " (pg_stat_replication: grant pg_monitor to the worker's role)")
        if not self.sync_standbys:
            return ("synchronous standbys are configured but none is connected and in sync: commits wait until"
                    " one is")
        return f"{self.sync_standbys} synchronous standby(s) in sync: a commit is on a standby before it is reported"


async def read(conn: asyncpg.Connection | asyncpg.Pool) -> Replication:
    row = await conn.fetchrow(_QUERY)
    return Replication(in_recovery=row["in_recovery"], synchronous_commit=row["synchronous_commit"],
                       standby_names=row["standby_names"], standbys=row["standbys"],
                       sync_standbys=None if row["hidden"] else row["sync_standbys"])
