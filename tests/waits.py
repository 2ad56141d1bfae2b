"""Waits on a condition, never a fixed sleep: a test that waits for something to happen
polls for it (every 50 ms) and fails with a clear message when it does not happen in time.

A fixed sleep is right only where the test means to let time pass (a key expiring, a
circuit's open period, a window that must show that nothing arrived)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

INTERVAL_S = 0.05


def eventually(check: Callable[[], bool], within_s: float = 5) -> None:
    """Return once ``check()`` is true; fail the test after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(INTERVAL_S)


async def eventually_async(check: Callable[[], bool], within_s: float = 5) -> None:
    """:func:`eventually` for a test on an event loop: the loop keeps running meanwhile
    (a server on the test's own loop can make ``check()`` true)."""
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(INTERVAL_S)
