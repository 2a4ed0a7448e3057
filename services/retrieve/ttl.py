"""A value read from the database and kept for ``ttl_s`` seconds, per process.

The retrieve engine keeps two such values: the vector stores' ``memory_vec_meta`` rows and
the planner statistics behind keyword pruning. Both are cheap to read but needed by every
request, so each is re-read at most every ``ttl_s`` (``invalidate`` forces the next read).
The expiry is a one-entry ``cachetools.TTLCache``; the loader is awaited here because
cachetools' decorators do not await.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from cachetools import TTLCache

T = TypeVar("T")
_KEY = "value"


class TtlValue(Generic[T]):
    def __init__(
        self, load: Callable[[], Awaitable[T]], ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._load = load
        self._cache: TTLCache[str, T] = TTLCache(1, ttl_s, timer=clock)

    async def get(self) -> T:
        try:
            return self._cache[_KEY]
        except KeyError:
            value = await self._load()
            self._cache[_KEY] = value
            return value

    def invalidate(self) -> None:
        self._cache.clear()
