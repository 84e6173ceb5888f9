"""Publishing a command's events to MEMORY_EVENTS, after its commit and before its ack.

The inbox row holds what the events are published from (processed_commands.events, or for a
create its result and event_facts: worker/services/base.py, published_events), written by the
statement that stores the result; the handler publishes them right after commit, so that
`cache.invalidate` reaches cache nodes before the bot gets its result, and acknowledges the
command only once they are stored. Handlers publishing at the same moment share one JetStream
atomic batch (`publish_coalesced`). Every event carries `Nats-Msg-Id` = its event id, so
events published twice within the stream's duplicate window are stored once: that is what
makes the republish of a redelivered command (worker/services/base.py, republishes()) safe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from contracts import subjects
from contracts.subjects import EVENTS_STREAM
from db.inbox import EventRow
from worker.shared.atomic import publish_atomic
from worker.shared.coalescer import Coalescer

_INVALIDATE = subjects.INVALIDATE_PREFIX
# Commands whose events one atomic batch may carry (creates have 2 to 4 each), and atomic
# batches in flight at once: one is stored while the next gathers.
TOGETHER_MAX_COMMANDS = 128
TOGETHER_RUNNERS = 2


class EventPublisher:
    def __init__(self, js: JetStreamContext, *, ack_timeout: float = 10.0, nc: NatsClient | None = None) -> None:
        self._js = js
        self._conn = nc  # set: the events of several commands may go out as one atomic batch
        self._ack_timeout = ack_timeout
        self._together = Coalescer(self._publish_groups, self.publish, max_batch=TOGETHER_MAX_COMMANDS,
                                   runners=TOGETHER_RUNNERS)

    async def publish_coalesced(self, events: Sequence[EventRow]) -> None:
        """publish(), with the events of commands published at the same moment stored as one
        atomic batch: one write instead of one per message. Alone, the events go out at once
        (nothing waits for company); a failure reaches only the caller whose events failed.
        """
        if events:
            await self._together(events)

    async def _publish_groups(self, groups: Sequence[Sequence[EventRow]]) -> list[None] | None:
        # Not stored as a batch (too few events, one published before, a timeout ...): the
        # coalescer publishes each command's events on their own, as always.
        return [None] * len(groups) if await self.publish_together(groups) else None

    async def publish(self, events: Sequence[EventRow]) -> None:
        """Publish events in order and wait for JetStream to store them all.

        Invalidations are stored before anything after them is sent: should one fail while a
        later event succeeds, the retry would otherwise put the invalidation second.
        """
        _event_subjects_only(events)
        split = next((i for i, event in enumerate(events) if not event.subject.startswith(_INVALIDATE)), len(events))
        for part in (events[:split], events[split:]):
            if part:
                await self._publish_in_order(part)

    async def publish_together(self, groups: Sequence[Sequence[EventRow]]) -> bool:
        """Publish the events of several commands as one JetStream atomic batch: stored all at
        once, in this order (each command's invalidations before the rest), with one write
        instead of one per message. False when the batch was not stored (an event stored by an
        earlier attempt fails the whole batch by its Nats-Msg-Id, a timeout, a leader change
        ...): the caller then publishes command by command, as always.
        """
        if self._conn is None:
            return False
        events = [event for group in groups for event in group]
        if not all(subjects.is_event_subject(event.subject) for event in events):
            return False  # each command's events on their own: only the one with a bad row fails
        stored = await publish_atomic(self._conn, [(e.subject, bytes(e.payload), e.headers) for e in events],
                                      timeout=self._ack_timeout)
        return stored is not None

    async def _publish_in_order(self, events: Sequence[EventRow]) -> None:
        # publish_async writes in call order on one connection; the stream keeps that order.
        futures = [
            await self._js.publish_async(event.subject, bytes(event.payload), headers=dict(event.headers),
                                         stream=EVENTS_STREAM)
            for event in events
        ]
        async with asyncio.timeout(self._ack_timeout):  # a deadline; wait_for wraps the wait in more futures
            await asyncio.gather(*futures)

    async def stop(self) -> None:
        """Shared batches still being stored finish first (their commands are acked after)."""
        await self._together.aclose(self._ack_timeout)


def _event_subjects_only(events: Sequence[EventRow]) -> None:
    """An event's subject is read back from a stored row (a command's inbox row): whatever a
    row says, nothing is published outside MEMORY_EVENTS' subjects."""
    for event in events:
        if not subjects.is_event_subject(event.subject):
            raise ValueError(f"not an event subject: {event.subject[:subjects.REPLY_SUBJECT_MAX]!r}")
