"""The vector-store port every adapter implements (pgvector, Qdrant), and its value types.

A store keeps one vector per (memory, signature) and never returns another owner's vectors.
Filter semantics, identical in every adapter: visible = (``owner == query.owner`` and, when given,
``session_id == query.session_id`` and ``agent_id == query.agent_id``) or (``include_global`` and
``scope == 'global'``, any owner); and ``state == 'active'``, not expired at ``query.now``,
``created_at > created_after`` and ``memory_type in types`` when given. Callers: embed
(``ensure``/``upsert``/``activate``), retrieve (``search``/``status``), ingest (``delete``/
``update_payload``), sleep (``neighbours``/``update_payload``); ``registry.open_stores`` builds the
adapters. Bad vectors (NaN, zero, a foreign dimension) -> ``ValidationFailed``; a backend
unreachable or unable to serve the signature -> ``DependencyDown``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Protocol

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType
from numpy.typing import NDArray


class VectorItem(msgspec.Struct, frozen=True, kw_only=True):
    """One vector to write, with the payload a store needs to filter without Postgres."""

    memory_id: str
    owner: str
    vector: list[float] | NDArray[np.float32]
    session_id: str | None = None
    agent_id: str | None = None
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
    agent_id: str | None = None
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


#: ``(memory_id_a, memory_id_b, cosine)`` with ``memory_id_a < memory_id_b``.
Pair = tuple[str, str, float]


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

    def point_refs(self, page: int = 1000) -> AsyncIterator[list[tuple[str, str]]]:
        """Pages of ``(memory_id, owner)`` of every vector held (all signatures), for the orphan
        sweep that reconciles the store with the ``memories`` rows."""

    async def status(self, signature: str) -> StoreStatus:
        """Health and counts, for ``engine.status``."""

    async def activate(self, signature: str) -> None:
        """Make ``signature`` the active one (Qdrant: alias swap; pgvector: nothing to switch,
        search always names its signature). Call when its backfill is complete."""

    async def drop(self, signature: str) -> int:
        """Remove every vector of a retired ``signature`` (and its index / collection); return how many."""

    async def neighbours(
        self,
        signature: str,
        owner: str,
        *,
        min_score: float,
        per_memory: int = 5,
        limit: int = 1000,
        since: datetime | None = None,
    ) -> list[Pair]:
        """Similar pairs among ``owner``'s active, unexpired memories (the sleep conflict phase).

        Memories with ``source='import'`` take no part (pgvector): sleep consolidates only
        what the owner's own traffic produced.

        Each memory probes its ``per_memory`` nearest neighbours of the same owner (never
        another owner's, never global ones of others); pairs with cosine >= ``min_score``
        are returned once each as ``(a, b, score)`` with ``a < b`` (as strings), best first,
        at most ``limit``. ``since``: only memories created or updated at/after it probe
        (their partners may be older), for incremental runs.

        One call answers for every probe at once, in bulk (pgvector: one partitioned pass,
        ``bulk_pairs``; Qdrant: batches of kNN queries, ``query_batch_points``), with the
        pairs that one ``search`` per probing memory would find. The partitioned pass is
        approximate like an ANN index: a pair whose memories share none of their nearest
        clusters is missed (and the probe keeps its next partner), never invented.
        """

    async def update_payload(
        self,
        owner: str,
        memory_ids: Sequence[str],
        *,
        state: str | UnsetType = UNSET,
        scope: str | UnsetType = UNSET,
        memory_type: str | UnsetType = UNSET,
        session_id: str | UnsetType | None = UNSET,
        agent_id: str | UnsetType | None = UNSET,
        expires_at: datetime | UnsetType | None = UNSET,
    ) -> int:
        """Mirror changed memory fields into the store's filter payload (every signature).

        Returns how many vectors were updated. pgvector filters by joining ``memories``, so
        it has nothing to mirror and returns 0; Qdrant updates the points' payload.
        """
