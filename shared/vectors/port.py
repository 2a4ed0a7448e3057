"""The vector-store port every adapter implements (pgvector, Qdrant), and its value types.

A store keeps one vector per (memory, signature). Searching is always scoped to one
owner (plus global-scope memories when asked), optionally one session, only ``active``
memories that are not expired; a store never returns another owner's vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec
import numpy as np
from numpy.typing import NDArray


class VectorItem(msgspec.Struct, frozen=True, kw_only=True):
    """One vector to write, with the payload a store needs to filter without Postgres."""

    memory_id: str
    owner: str
    vector: list[float] | NDArray[np.float32]
    session_id: str | None = None
    scope: str = "apiKey"
    state: str = "active"
    memory_type: str = "factual"
    created_at: datetime | None = None
    expires_at: datetime | None = None


class VectorQuery(msgspec.Struct, frozen=True, kw_only=True):
    owner: str
    vector: list[float] | NDArray[np.float32]
    limit: int = 20
    session_id: str | None = None
    types: Sequence[str] | None = None
    include_global: bool = True
    created_after: datetime | None = None
    now: datetime | None = None  # expiry cut-off (default: the store's now)


class VectorHit(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    score: float  # cosine similarity, higher is closer


class StoreStatus(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    healthy: bool
    signature: str | None = None
    dim: int | None = None
    vectors: int = 0
    detail: str = ""


class VectorStore(Protocol):
    """What embed (write), retrieve (search), ingest (delete) and sleep (pairs) need."""

    name: str

    async def ensure(self, signature: str, dim: int) -> None:
        """Prepare storage (table index / collection) for vectors of ``signature``."""

    async def upsert(self, signature: str, items: Sequence[VectorItem]) -> int:
        """Write vectors; return how many were written."""

    async def delete(self, owner: str, memory_ids: Sequence[str]) -> int:
        """Remove every vector (all signatures) of these memories; return how many."""

    async def search(self, signature: str, query: VectorQuery) -> list[VectorHit]:
        """Nearest memories of ``query.owner`` (cosine), best first."""

    async def status(self, signature: str) -> StoreStatus:
        """Health and counts, for ``engine.status``."""
