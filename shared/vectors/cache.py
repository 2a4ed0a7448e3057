"""Query-vector caches: LRU with a time-to-live, keyed by a digest of the query text.

The embed service keeps one (keyed `{signature}:{text_digest(text, owner)}`, each replica its
own), and each retrieve process keeps one of the vectors it asked for, so a repeated query
skips the embed round trip. Both are per owner: how fast a query is answered says nothing
about what another tenant asked. Values are float32 rows, ~1.5 KiB for 384 dimensions
(10 000 entries take ~16 MiB). The LRU and expiry are `cachetools.TTLCache`; this class adds
the hit/miss counts and "size 0 = off". Single-threaded: only the event loop touches it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from cachetools import TTLCache

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
        self._items: TTLCache[str, Vector] | None = TTLCache(size, ttl_s, timer=clock) if size else None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        if self._items is None:
            return 0
        self._items.expire()
        return len(self._items)

    def get(self, key: str) -> Vector | None:
        """The vector if present and fresh (and mark it recently used); else None."""
        vector = self._items.get(key) if self._items is not None else None
        if vector is None:
            self.misses += 1
        else:
            self.hits += 1
        return vector

    def put(self, key: str, vector: Vector) -> None:
        """Store (or refresh) a vector, evicting the least recently used beyond `size`."""
        if self._items is not None:
            self._items[key] = vector

    def clear(self) -> None:
        if self._items is not None:
            self._items.clear()
