"""How the worker's background loops (command retention, inbox pruning) know to end.

They run until the worker cancels them at shutdown. A cancellation can be lost on the way:
Python 3.11's asyncio.wait_for, which nats-py's requests use, returns the awaited result and
drops the CancelledError when the cancellation races with that result (fixed in Python 3.12).
A loop that went on after such a round would keep the worker's shutdown waiting until it was
killed, so each loop also asks whether its task was asked to stop.
"""

from __future__ import annotations

import asyncio


def cancel_requested() -> bool:
    """True once the current task was cancelled, even if the CancelledError was swallowed."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
