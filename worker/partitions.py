"""One pull loop per partition: fetch a command, handle it, fetch the next.

Each partition consumer has max_ack_pending=1 (worker/streams.py), so a workspace's commands
run one at a time, in publish order, whichever replica holds them; a loop only keeps a pull
request out while it has no command in hand. nats-py directly rather than a framework
subscriber: per message this loop is the whole cost (no dependency injection, no thread hop
for the decoder), which profiling put at about a quarter of the worker's CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import subjects
from worker import streams

log = structlog.get_logger("worker")

# How long an idle pull waits at the server; also about how long stop() waits for an idle loop.
FETCH_WAIT_S = 1.0
CRASH_RETRY_DELAY_S = 5.0

Handler = Callable[[Msg], Awaitable[None]]


def _tracer():
    """Spans for every consumed command when the `otel` extra is installed (the process's
    tracer provider decides where they go)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("memory-worker")


class PartitionConsumers:
    def __init__(self, js: JetStreamContext, handler: Handler, partitions: int, *,
                 crash_retry_delay: float = CRASH_RETRY_DELAY_S) -> None:
        self._js = js
        self._crash_retry_delay = crash_retry_delay
        self._handler = handler
        self._partitions = partitions
        self._stopping = False
        self._tasks: list[asyncio.Task] = []
        self._subs: list = []
        self._tracer = _tracer()

    async def start(self) -> None:
        for partition in range(self._partitions):
            sub = await self._js.pull_subscribe_bind(durable=streams.partition_consumer_name(partition),
                                                     stream=subjects.COMMANDS_STREAM)
            self._subs.append(sub)
            self._tasks.append(asyncio.create_task(self._loop(partition, sub), name=f"partition-{partition}"))

    async def stop(self, timeout: float) -> None:
        """Take no new command; let the ones in hand finish (up to `timeout`), then cancel.
        Idempotent: the worker calls it on the way out and again from its exit stack."""
        if self._stopping:
            return
        self._stopping = True
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _loop(self, partition: int, sub) -> None:
        while not self._stopping:
            try:
                msgs = await sub.fetch(1, timeout=FETCH_WAIT_S)
            except nats.errors.TimeoutError:
                continue
            except Exception as exc:  # reconnecting, or the consumer briefly away: try again
                if self._stopping:
                    return
                log.warning("fetch_failed", partition=partition, error=repr(exc))
                await asyncio.sleep(1.0)
                continue
            for msg in msgs:
                await self._handle(msg)

    async def _handle(self, msg: Msg) -> None:
        try:
            if self._tracer is None:
                await self._handler(msg)
            else:
                with self._tracer.start_as_current_span(f"{msg.subject} process", attributes={
                        "messaging.system": "nats", "messaging.destination.name": msg.subject}):
                    await self._handler(msg)
        except Exception:
            # A bug outside the handler's own failure paths: say so loudly, and hand the
            # message back for a retry rather than leave it unacknowledged until ack_wait.
            log.exception("handler_crashed", subject=msg.subject)
            with contextlib.suppress(Exception):
                await msg.nak(delay=self._crash_retry_delay)
