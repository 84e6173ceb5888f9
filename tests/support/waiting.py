"""Wait for a condition with a bound: the one way a test synchronises with the system."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable


async def wait_until(condition: Callable[[], object | Awaitable[object]], *, timeout: float = 10.0,
                     interval: float = 0.02, what: str = "condition") -> None:
    """Poll `condition` (plain or async) until it is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        met = condition()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        await asyncio.sleep(interval)
