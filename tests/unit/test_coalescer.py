"""worker.shared.coalescer: concurrent calls share a batch call, and each caller still gets exactly
its own result or its own exception."""

from __future__ import annotations

import asyncio

import pytest

from worker.shared.coalescer import Coalescer


class Recorder:
    """A batch and a single function that record their calls; `gate` holds the first call."""

    def __init__(self, *, fail_batch: bool = False, fail_items: tuple[int, ...] = ()) -> None:
        self.batches: list[list[int]] = []
        self.singles: list[int] = []
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        self.fail_batch = fail_batch
        self.fail_items = fail_items

    async def batch(self, items):
        self.batches.append(list(items))
        if self.fail_batch:
            raise RuntimeError("batch failed")
        return [item * 10 for item in items]

    async def single(self, item):
        self.singles.append(item)
        if not self.entered.is_set():
            self.entered.set()
            await self.gate.wait()
        if item in self.fail_items:
            raise ValueError(f"item {item} failed")
        return item * 10


async def _held_first_then(coalescer: Coalescer, rec: Recorder, later: list[int]) -> list:
    """Start item 0 (held inside `single`), queue `later` behind it, then release."""
    first = asyncio.create_task(coalescer(0))
    await rec.entered.wait()
    tasks = [asyncio.create_task(coalescer(i)) for i in later]
    await asyncio.sleep(0)  # every caller is queued
    rec.gate.set()
    return await asyncio.gather(first, *tasks, return_exceptions=True)


async def test_a_lone_call_runs_on_its_own_at_once():
    rec = Recorder()
    rec.entered.set()
    coalescer = Coalescer(rec.batch, rec.single, max_batch=8)
    assert await coalescer(7) == 70
    assert rec.singles == [7] and rec.batches == []


async def test_calls_arriving_during_a_run_go_together_in_arrival_order():
    rec = Recorder()
    coalescer = Coalescer(rec.batch, rec.single, max_batch=8)
    results = await _held_first_then(coalescer, rec, [1, 2, 3])
    assert results == [0, 10, 20, 30]
    assert rec.singles == [0]
    assert rec.batches == [[1, 2, 3]]


async def test_batches_never_exceed_max_batch():
    rec = Recorder()
    coalescer = Coalescer(rec.batch, rec.single, max_batch=2)
    results = await _held_first_then(coalescer, rec, [1, 2, 3, 4, 5])
    assert results == [0, 10, 20, 30, 40, 50]
    # The last one left alone goes through the single path.
    assert rec.batches == [[1, 2], [3, 4]] and rec.singles == [0, 5]


async def test_a_failed_batch_runs_each_item_alone_and_errors_stay_with_their_caller():
    rec = Recorder(fail_batch=True, fail_items=(2,))
    coalescer = Coalescer(rec.batch, rec.single, max_batch=8)
    results = await _held_first_then(coalescer, rec, [1, 2, 3])
    assert results[0] == 0 and results[1] == 10 and results[3] == 30
    assert isinstance(results[2], ValueError) and "item 2" in str(results[2])
    assert rec.batches == [[1, 2, 3]]
    assert sorted(rec.singles) == [0, 1, 2, 3]


async def test_a_caller_cancelled_while_waiting_is_not_run():
    rec = Recorder()
    coalescer = Coalescer(rec.batch, rec.single, max_batch=8)
    first = asyncio.create_task(coalescer(0))
    await rec.entered.wait()
    gone = asyncio.create_task(coalescer(1))
    kept = [asyncio.create_task(coalescer(i)) for i in (2, 3)]
    await asyncio.sleep(0)
    gone.cancel()
    rec.gate.set()
    assert await asyncio.gather(first, *kept) == [0, 20, 30]
    assert rec.batches == [[2, 3]]
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_several_runners_run_batches_side_by_side():
    started: list[list[int]] = []
    entered = asyncio.Condition()
    release = asyncio.Event()

    async def run(items: list[int]) -> list[int]:
        async with entered:
            started.append(items)
            entered.notify_all()
        await release.wait()
        return items

    async def runs_started(n: int) -> None:
        async with entered:
            await asyncio.wait_for(entered.wait_for(lambda: len(started) >= n), 5)

    async def single(item):
        return (await run([item]))[0]

    coalescer = Coalescer(run, single, max_batch=8, runners=2)
    tasks = [asyncio.create_task(coalescer(0))]
    await runs_started(1)
    tasks.append(asyncio.create_task(coalescer(1)))
    await runs_started(2)  # a second run in flight while the first has not finished
    tasks += [asyncio.create_task(coalescer(i)) for i in (2, 3)]
    await asyncio.sleep(0)  # both queued behind the busy runners
    release.set()
    assert await asyncio.gather(*tasks) == [0, 1, 2, 3]
    assert started[:2] == [[0], [1]] and started[2:] == [[2, 3]]


def test_sizes_must_be_positive():
    async def noop(x):
        return x

    with pytest.raises(ValueError):
        Coalescer(noop, noop, max_batch=0)
    with pytest.raises(ValueError):
        Coalescer(noop, noop, max_batch=1, runners=0)


async def test_every_run_is_observed_with_its_size():
    rec = Recorder()
    sizes: list[int] = []
    coalescer = Coalescer(rec.batch, rec.single, max_batch=8, observe=sizes.append)
    await _held_first_then(coalescer, rec, [1, 2])
    assert sizes == [1, 2]


async def test_a_call_arriving_as_the_last_runner_finishes_is_still_served():
    """A partition loop calls again as soon as its answer arrives: that is the same loop turn
    in which the runner finished, before its done-callback has run. The call must start a
    runner of its own, not queue behind one that is gone."""

    async def single(item):
        return item * 10

    coalescer = Coalescer(lambda items: None, single, max_batch=8, runners=1)

    async def back_to_back():
        return await coalescer(1), await coalescer(2)

    assert await asyncio.wait_for(back_to_back(), 2) == (10, 20)


async def test_callers_of_a_cancelled_runner_get_an_error_they_can_retry():
    release = asyncio.Event()

    async def single(item):
        await release.wait()
        return item

    coalescer = Coalescer(lambda items: None, single, max_batch=8, runners=1)
    first = asyncio.create_task(coalescer(1))
    await asyncio.sleep(0)
    queued = asyncio.create_task(coalescer(2))
    await asyncio.sleep(0)
    for task in list(coalescer._running):
        task.cancel()
    for caller in (first, queued):
        with pytest.raises(RuntimeError, match="cancelled"):
            await asyncio.wait_for(caller, 2)


async def test_a_declined_batch_runs_each_item_on_its_own():
    """A batch function returning None (too few items to be worth it, refused whole): every
    caller is served by `single`, with its own result or its own error."""
    rec = Recorder(fail_items=(2,))

    async def decline(items):
        rec.batches.append(list(items))
        return None

    coalescer = Coalescer(decline, rec.single, max_batch=8)
    results = await _held_first_then(coalescer, rec, [1, 2, 3])

    assert rec.batches == [[1, 2, 3]]
    assert sorted(rec.singles) == [0, 1, 2, 3]
    assert results[0] == 0 and results[1] == 10 and results[3] == 30
    assert isinstance(results[2], ValueError)


async def test_a_single_call_cancelled_on_its_own_fails_only_its_caller_with_an_error():
    """A caller's error path catches Exception: a CancelledError from inside `single` must
    reach it as an ordinary error, and must not stop the runner serving the others."""

    async def single(item):
        if item == 2:
            raise asyncio.CancelledError()
        await asyncio.sleep(0.01)  # still running when item 2 is cancelled
        return item * 10

    async def decline(items):
        return None

    coalescer = Coalescer(decline, single, max_batch=8, runners=1)
    results = await asyncio.gather(*(coalescer(i) for i in (1, 2, 3)), return_exceptions=True)

    assert results[0] == 10 and results[2] == 30
    assert isinstance(results[1], RuntimeError) and "cancelled" in str(results[1])
