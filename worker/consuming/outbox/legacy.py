"""The outbox table of older workers, drained once at start-up.

Before db/migrations/006_events_in_inbox.sql a command's events were rows of the outbox table,
published after commit and marked published; a sweeper published what a crash left behind.
Nothing writes that table any more, but an upgrade must lose nothing: rows an older worker
left unpublished are published here, command by command in the order they were written (each
command's invalidations first), before this worker takes any command, and marked published
(the hourly prune removes them a week later). A row published twice (two workers starting at
once, or a row an older worker published without marking it) is stored once by its
Nats-Msg-Id. A command whose rows cannot be published is logged and left for the next
start-up; `memory_outbox_backlog` counts what is left.
"""

from __future__ import annotations

import structlog

from db.repository import LegacyOutboxRow, MemoryRepository
from worker.consuming import metrics
from worker.consuming.outbox.publisher import EventPublisher

log = structlog.get_logger("outbox")

BATCH = 500


def _by_command(rows: list[LegacyOutboxRow]) -> list[list[LegacyOutboxRow]]:
    """Rows grouped by command, in id order (a command's rows are consecutive ids)."""
    groups: dict[str, list[LegacyOutboxRow]] = {}
    for row in rows:
        groups.setdefault(row.command_id, []).append(row)
    return list(groups.values())


async def drain_legacy_outbox(publisher: EventPublisher, repo: MemoryRepository) -> int:
    """Publish and mark every unpublished row of the old outbox table; returns how many were
    published. Sets memory_outbox_backlog to the rows left (0 when all went out)."""
    total, after = 0, 0
    while rows := await repo.legacy_outbox(BATCH, after_id=after):
        after = rows[-1].id
        published: list[int] = []
        for command_rows in _by_command(rows):
            try:
                await publisher.publish([row.event for row in command_rows])
            except Exception as exc:
                log.warning("legacy_outbox_row_not_published", first_row=command_rows[0].id,
                            subject=command_rows[0].subject, error=repr(exc))
                continue
            published += [row.id for row in command_rows]
        await repo.mark_legacy_published(published)
        total += len(published)
    left = await repo.legacy_outbox_backlog()
    metrics.OUTBOX_BACKLOG.set(left)
    if total or left:
        log.info("legacy_outbox_drained", rows=total, left=left)
    return total
