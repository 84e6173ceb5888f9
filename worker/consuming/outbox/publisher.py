"""Publishing outbox rows to MEMORY_EVENTS.

The handler publishes its own command's rows right after commit (so `cache.invalidate`
reaches cache nodes before the bot gets its result); handlers publishing at the same moment
share one JetStream atomic batch (`publish_coalesced`), and marking rows published is batched
off the hot path. A sweeper publishes rows a crash left behind. Every event carries
`Nats-Msg-Id` = its event id, so a row published twice is stored once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from contracts import subjects
from contracts.subjects import EVENTS_STREAM
from db.repository import MemoryRepository, OutboxRow
from worker.consuming import metrics
from worker.shared.atomic import publish_atomic
from worker.shared.coalescer import Coalescer

log = structlog.get_logger("outbox")


def _by_command(rows: Sequence[OutboxRow]) -> list[list[OutboxRow]]:
    """Rows grouped by command, in id order (a command's rows are consecutive ids)."""
    groups: dict[str, list[OutboxRow]] = {}
    for row in rows:
        groups.setdefault(row.command_id, []).append(row)
    return list(groups.values())


_INVALIDATE = subjects.INVALIDATE_PREFIX
# Commands whose rows one atomic batch may carry (creates have 2 to 4 rows each), and atomic
# batches in flight at once: one is stored while the next gathers.
TOGETHER_MAX_COMMANDS = 128
TOGETHER_RUNNERS = 2


class OutboxPublisher:
    def __init__(self, js: JetStreamContext, repo: MemoryRepository, *, ack_timeout: float = 10.0,
                 sweep_interval: float = 2.0, sweep_age: float = 5.0, batch: int = 500,
                 nc: NatsClient | None = None) -> None:
        self._js = js
        self._conn = nc  # set: the rows of several commands may go out as one atomic batch
        self._repo = repo
        self._ack_timeout = ack_timeout
        self._sweep_interval = sweep_interval
        self._sweep_age = sweep_age
        self._batch = batch
        self._published: list[int] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._together = Coalescer(self._publish_groups, self.publish, max_batch=TOGETHER_MAX_COMMANDS,
                                   runners=TOGETHER_RUNNERS)

    async def publish_coalesced(self, rows: Sequence[OutboxRow]) -> None:
        """publish(), with the rows of commands published at the same moment stored as one
        atomic batch: one write instead of one per message. Alone, the rows go out at once
        (nothing waits for company); a failure reaches only the caller whose rows failed.
        """
        if rows:
            await self._together(rows)

    async def _publish_groups(self, groups: Sequence[Sequence[OutboxRow]]) -> list[None] | None:
        # Not stored as a batch (too few rows, a row published before, a timeout ...): the
        # coalescer publishes each command's rows on their own, as always.
        return [None] * len(groups) if await self.publish_together(groups) else None

    async def publish(self, rows: Sequence[OutboxRow]) -> None:
        """Publish rows in order and wait for JetStream to store them all.

        Invalidations are stored before anything after them is sent: should one fail while a
        later event succeeds, the retry would otherwise put the invalidation second.
        """
        if not rows:
            return
        split = next((i for i, row in enumerate(rows) if not row.subject.startswith(_INVALIDATE)), len(rows))
        for batch in (rows[:split], rows[split:]):
            if batch:
                await self._publish_in_order(batch)
        self._mark(rows)

    async def publish_together(self, groups: Sequence[Sequence[OutboxRow]]) -> bool:
        """Publish the rows of several commands as one JetStream atomic batch: stored all at
        once, in this order (each command's invalidations before the rest), with one write
        instead of one per message. False when the batch was not stored (a row already
        published by an earlier attempt fails the whole batch by its Nats-Msg-Id, a timeout,
        a leader change ...): the caller then publishes command by command, as always.
        """
        if self._conn is None:
            return False
        rows = [row for group in groups for row in group]
        stored = await publish_atomic(self._conn, [(row.subject, bytes(row.payload), row.headers) for row in rows],
                                      timeout=self._ack_timeout)
        if stored is None:
            return False
        self._mark(rows)
        return True

    def _mark(self, rows: Sequence[OutboxRow]) -> None:
        """Published: marked in the database by the next batched flush."""
        self._published.extend(row.id for row in rows)
        if len(self._published) >= self._batch:
            self._wake.set()

    async def _publish_in_order(self, rows: Sequence[OutboxRow]) -> None:
        # publish_async writes in call order on one connection; the stream keeps that order.
        futures = [
            await self._js.publish_async(row.subject, bytes(row.payload), headers=dict(row.headers),
                                         stream=EVENTS_STREAM)
            for row in rows
        ]
        await asyncio.wait_for(asyncio.gather(*futures), self._ack_timeout)

    async def flush(self) -> None:
        ids, self._published = self._published, []
        if not ids:
            return
        try:
            await self._repo.mark_published(ids)
        except Exception:
            # They were published; at worst the sweeper publishes them again and the
            # stream drops the duplicates by Nats-Msg-Id.
            self._published[:0] = ids
            raise

    async def sweep(self) -> int:
        """Publish rows older than the in-flight window that nobody marked published.

        Command by command (each keeps its invalidation-first order): one that cannot be
        published is logged and left for the next sweep, and the rest still go out.
        """
        total, after = 0, 0
        while True:
            rows = await self._repo.unpublished(self._sweep_age, self._batch, after_id=after)
            if not rows:
                return total
            after = rows[-1].id
            for command_rows in _by_command(rows):
                try:
                    await self.publish(command_rows)
                except Exception as exc:
                    log.warning("outbox_row_not_published", first_row=command_rows[0].id,
                                subject=command_rows[0].subject, error=repr(exc))
                    continue
                total += len(command_rows)
            await self.flush()
            log.info("outbox_swept", rows=total)

    async def run(self) -> None:
        """Background loop: batched marking, periodic sweep. Stops with stop()."""
        loop = asyncio.get_running_loop()
        next_sweep = loop.time()
        while not self._stopping:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=0.05)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.flush()
                if loop.time() >= next_sweep:
                    await self.sweep()
                    backlog, age = await self._repo.outbox_backlog()
                    metrics.OUTBOX_BACKLOG.set(backlog)
                    metrics.OUTBOX_OLDEST_AGE.set(age)
                    next_sweep = loop.time() + self._sweep_interval
            except Exception as exc:  # the loop must outlive a database or broker outage
                log.warning("outbox_retry", error=repr(exc))
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        # Shared batches still being stored finish first, so their rows are marked below.
        await self._together.aclose(self._ack_timeout)
        try:
            await self.flush()
        except Exception as exc:
            log.warning("outbox_flush_on_stop_failed", error=repr(exc))
