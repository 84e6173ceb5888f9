"""The worker's background loops end at shutdown even when a cancellation is swallowed
(worker/consuming/background.py): the cause, reproduced, and the loop shape that survives it."""

from __future__ import annotations

import asyncio

from worker.consuming.background import cancel_requested


async def test_wait_for_can_swallow_a_cancellation_that_races_with_its_result():
    """Why the loops ask: the cancel arrives as the awaited answer does, and wait_for returns
    the answer instead of raising (Python 3.11; 3.12 raises)."""
    loop = asyncio.get_running_loop()
    answers: list[asyncio.Future] = []
    rounds = 0

    async def one_round() -> None:  # a nats-py request: wait_for on the reply's future
        answers.append(loop.create_future())
        await asyncio.wait_for(answers[-1], 30)

    async def until_cancelled() -> None:
        nonlocal rounds
        while not cancel_requested():
            rounds += 1
            try:
                await one_round()
            except Exception:  # as the loops do: an outage is retried next round
                pass
            await asyncio.sleep(0.01)

    task = asyncio.create_task(until_cancelled())
    while not answers:
        await asyncio.sleep(0)
    answers[-1].set_result(b"reply")
    task.cancel()
    await asyncio.wait_for(task, 5)  # ends instead of going on round after round
    assert rounds == 1 and not task.cancelled()


async def test_a_plain_cancellation_still_cancels():
    async def until_cancelled() -> None:
        while not cancel_requested():
            await asyncio.sleep(30)

    task = asyncio.create_task(until_cancelled())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.wait([task], timeout=5)
    assert task.cancelled()

