"""A value read from the database and kept for ``ttl_s`` seconds, per process.

The retrieve engine keeps two such values: the vector stores' ``memory_vec_meta`` rows and
the planner statistics behind keyword pruning. Both are cheap to read but needed by every
request, so each is re-read at most every ``ttl_s`` (``invalidate`` forces the next read).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TtlValue(Generic[T]):
    def __init__(self, load: Callable[[], Awaitable[T]], ttl_s: float) -> None:
        self._load = load
        self._ttl = ttl_s
        self._at = -float("inf")
        self._value: T | None = None

    async def get(self) -> T:
        now = time.monotonic()
        if self._value is None or now - self._at >= self._ttl:
            self._value = await self._load()
            self._at = now
        return self._value

    def invalidate(self) -> None:
        self._at = -float("inf")
