"""A swap gate: many users at once, or one exclusive swap that waits for them.

Job batches `use()` the source and stores they were given; a settings change takes
`exclusive()` to replace them: it waits for the batches in flight to finish, holds new ones
back until the swap is done, then lets them through with the new source. Pure asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class SwapGate:
    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._users = 0
        self._swapping = False

    @property
    def users(self) -> int:
        return self._users

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[None]:
        """Hold the gate open while a batch runs (waits while a swap is in progress)."""
        async with self._cond:
            await self._cond.wait_for(lambda: not self._swapping)
            self._users += 1
        try:
            yield
        finally:
            async with self._cond:
                self._users -= 1
                self._cond.notify_all()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """Wait for every user to finish, keep new ones out until the block ends."""
        async with self._cond:
            await self._cond.wait_for(lambda: not self._swapping)
            self._swapping = True
            try:
                await self._cond.wait_for(lambda: self._users == 0)
            except BaseException:
                self._swapping = False
                self._cond.notify_all()
                raise
        try:
            yield
        finally:
            async with self._cond:
                self._swapping = False
                self._cond.notify_all()
