"""Polling for the isolation and backpressure tests: wait for a condition, fail naming it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 90.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
