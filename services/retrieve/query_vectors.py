"""The query vectors a retrieve process already asked the embed service for.

A repeated query (a chat that asks again, a dashboard that polls, the proxy injecting memory
into every turn) then skips the embed round trip. Every entry is of one embedding signature:
the entries are dropped when the embed service answers with another (the model was switched)
and when no vector store searches theirs any more (the switch completed), so a kept vector of
the old model never stands in for a query of the new one. Entries are per owner (as are the
embed service's, which retrieve asks with the owner): a faster answer never tells a tenant
that another one asked the same question.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from numpy.typing import NDArray

from shared.digest import text_digest
from shared.observability.metrics import RETRIEVE_QUERY_VECTOR_CACHE
from shared.vectors.cache import VectorCache

_HITS, _MISSES = RETRIEVE_QUERY_VECTOR_CACHE.labels("hit"), RETRIEVE_QUERY_VECTOR_CACHE.labels("miss")


class QueryVectors:
    """At most ``size`` query vectors for ``ttl_s`` seconds each (``size`` 0: off)."""

    def __init__(self, size: int, ttl_s: float) -> None:
        self.cache = VectorCache(size, ttl_s)
        self.signature: str | None = None

    def get(self, owner: str, query: str, searched: Collection[str]) -> tuple[NDArray[np.float32], str] | None:
        """The vector and its signature when ``owner`` asked ``query`` recently; else None.
        ``searched``: the signatures the vector stores search now (empty: none recorded yet);
        when the kept vectors' is not among them, every kept vector is dropped."""
        if self.signature is None or not self.cache.size:
            return None
        if searched and self.signature not in searched:
            self.clear()
            return None
        vector = self.cache.get(text_digest(query, owner))
        if vector is None:
            _MISSES.inc()
            return None
        _HITS.inc()
        return vector, self.signature  # as kept: the stores take float32 arrays

    def clear(self) -> None:
        """Drop every kept vector."""
        self.cache.clear()
        self.signature = None

    def put(self, owner: str, query: str, signature: str, vector: Sequence[float] | NDArray[np.float32]) -> None:
        """Keep the embed service's answer to ``owner``'s ``query``; another signature drops the rest."""
        if not self.cache.size:
            return
        if signature != self.signature:
            self.cache.clear()
            self.signature = signature
        self.cache.put(text_digest(query, owner), np.asarray(vector, dtype=np.float32))
