"""Polling for tests: wait until a condition holds, with a deadline and a message that says what
was awaited (and, when asked, the state seen at the timeout)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    check: Callable[[], Awaitable[T | None]],
    what: str = "condition",
    *,
    timeout: float = 90.0,
    interval: float = 0.05,
    state: Callable[[], Awaitable[object]] | None = None,
) -> T:
    """Await ``check`` every ``interval`` seconds until it returns something truthy, and return
    that value; after ``timeout`` seconds raise ``AssertionError`` naming ``what`` and, when
    given, what ``state`` reads at that moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            seen = f"; state: {await state()}" if state is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{seen}")
        await asyncio.sleep(interval)
