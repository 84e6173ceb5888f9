"""Concurrent calls run as one batch call: the group commit of the create path.

Callers that arrive while a batch is running wait and go together in the next one; nothing
ever waits for company (an idle coalescer runs a lone call at once, through the single
path), so batching adds no latency at low load and grows with load by itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import structlog

log = structlog.get_logger("worker")

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """`await coalescer(item)` returns what `single(item)` would have.

    Up to `runners` batches run at once, each of at most `max_batch` items. A batch that
    raises is run again item by item through `single`, so each caller gets its own result
    or its own exception, exactly as without batching; so is one the batch function
    declines by returning None (too few items to be worth a batch, refused as a whole).
    """

    def __init__(self, batch: Callable[[Sequence[T]], Awaitable[Sequence[R] | None]],
                 single: Callable[[T], Awaitable[R]], *, max_batch: int, runners: int = 1,
                 observe: Callable[[int], None] = lambda size: None) -> None:
        if max_batch < 1 or runners < 1:
            raise ValueError("max_batch and runners must be at least 1")
        self._batch = batch
        self._single = single
        self._max_batch = max_batch
        self._runners = runners
        self._observe = observe
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._live = 0  # runners started and not yet past their last look at _waiting

    async def __call__(self, item: T) -> R:
        loop = asyncio.get_running_loop()  # once: on Python 3.11 each call asks the kernel for the pid
        future: asyncio.Future[R] = loop.create_future()
        self._waiting.append((item, future))
        # _live, not the set of tasks: a runner counts until its last look at _waiting, with no
        # await in between, so a call arriving as the last runner leaves always starts one.
        if self._live < self._runners:
            self._live += 1
            task = loop.create_task(self._drain())
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return await future

    async def aclose(self, timeout: float) -> None:
        """Wait for the batches in the database to finish (at shutdown, after the callers)."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=timeout)

    async def _drain(self) -> None:
        taken: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while self._waiting:
                taken = self._waiting[:self._max_batch]
                del self._waiting[:self._max_batch]
                # A caller cancelled while waiting (the worker stopping) is not run at all.
                taken = [(item, future) for item, future in taken if not future.done()]
                if taken:
                    self._observe(len(taken))
                if len(taken) == 1:
                    await self._one(*taken[0])
                elif taken:
                    await self._together(taken)
                taken = []
        except BaseException:
            # This runner was cancelled (event loop teardown): its own callers get an ordinary
            # error (their handler retries); callers still waiting too, unless another runner
            # is left to serve them.
            stranded = taken + (self._waiting if self._live == 1 else [])
            for _, future in stranded:
                if not future.done():
                    future.set_exception(RuntimeError("the batch runner was cancelled"))
            if self._live == 1:
                self._waiting.clear()
            raise
        finally:
            self._live -= 1

    async def _together(self, taken: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._batch([item for item, _ in taken])
        except Exception as exc:
            log.warning("batch_failed_running_one_by_one", size=len(taken), error=repr(exc))
            results = None
        if results is None:
            await asyncio.gather(*(self._one(item, future) for item, future in taken))
            return
        for (_, future), result in zip(taken, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def _one(self, item: T, future: asyncio.Future[R]) -> None:
        try:
            result = await self._single(item)
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this runner is being cancelled: _drain answers its callers
            # Cancelled inside `single` alone: its caller gets an ordinary error to retry on,
            # which a caller's error path catches (a CancelledError would slip past it).
            if not future.done():
                future.set_exception(RuntimeError(f"the call was cancelled: {exc!r}"))
            return
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)
