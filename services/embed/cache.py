"""The query-embedding cache: LRU with a time-to-live, keyed `{signature}:{sha256(text)}`.

One cache per process (each embed replica keeps its own); values are float32 rows, ~1.5 KiB
for 384 dimensions, so the default 10 000 entries take ~16 MiB. Single-threaded: only the
event loop touches it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class VectorCache:
    """LRU of at most `size` vectors, each valid `ttl_s` seconds after it was stored."""

    def __init__(self, size: int, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        if ttl_s <= 0:
            raise ValueError(f"cache ttl must be > 0, got {ttl_s}")
        self.size = size
        self.ttl_s = ttl_s
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Vector]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Vector | None:
        """The vector if present and fresh (and mark it recently used); else None."""
        entry = self._items.get(key)
        if entry is None:
            self.misses += 1
            return None
        stored_at, vector = entry
        if self._clock() - stored_at >= self.ttl_s:
            del self._items[key]
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return vector

    def put(self, key: str, vector: Vector) -> None:
        """Store (or refresh) a vector, evicting the least recently used beyond `size`."""
        if self.size == 0:
            return
        self._items[key] = (self._clock(), vector)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
