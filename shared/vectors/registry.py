"""Open the vector stores a service uses: pgvector always, Qdrant when configured.

``config.qdrant.url`` selects the Qdrant client: ``http(s)://...`` -> a server;
``:memory:`` or a filesystem path -> qdrant-client's local mode. Local mode keeps its data
in this process (and a path can be opened by one process only), so local clients are
shared per location within the process and closed when their last user closes.

Policy kept small: ``primary`` says which store should serve a search (Qdrant when
configured and healthy for the signature, else pgvector, with the reason); the retrieve
service decides what to do on errors. Writes and deletes go to ``all`` stores.

qdrant-client (with grpc, pydantic and protobuf: ~90 MB resident) is imported only when a
Qdrant is configured, so a pgvector-only service does not carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from shared.settings.env import QdrantConfig, ServiceConfig

from .pgvector import DEFAULT_EXACT_MAX_ROWS, PgVectorStore
from .port import VectorItem, VectorStore

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

    from .qdrant import QdrantStore

_LOCAL: dict[str, tuple[AsyncQdrantClient, int]] = {}


@dataclass
class VectorStores:
    """The open stores; ``close()`` releases the Qdrant client (the pool is the caller's)."""

    pgvector: PgVectorStore
    qdrant: QdrantStore | None = None
    _qdrant_key: str | None = field(default=None, repr=False)

    @property
    def all(self) -> list[VectorStore]:
        """Every open store: writes, deletes and payload updates go to each."""
        return [self.pgvector] if self.qdrant is None else [self.pgvector, self.qdrant]

    @property
    def external(self) -> list[VectorStore]:
        """The stores other than pgvector (whose vectors live in the memories' own database)."""
        return [] if self.qdrant is None else [self.qdrant]

    async def primary(self, signature: str) -> tuple[VectorStore, str | None]:
        """The store to search first, and why Qdrant is not it (None when it is or is not configured)."""
        if self.qdrant is None:
            return self.pgvector, None
        status = await self.qdrant.status(signature)
        if status.healthy:
            return self.qdrant, None
        return self.pgvector, f"qdrant: {status.detail}"

    async def upsert(self, signature: str, items: Sequence[VectorItem]) -> dict[str, int]:
        """Write to every store; vectors written per store name. Errors propagate."""
        return {store.name: await store.upsert(signature, items) for store in self.all}

    async def delete(self, owner: str, memory_ids: Sequence[str]) -> dict[str, int]:
        """Delete from every store; vectors removed per store name. Errors propagate."""
        return {store.name: await store.delete(owner, memory_ids) for store in self.all}

    async def close(self) -> None:
        if self.qdrant is not None:
            await _release(self._qdrant_key, self.qdrant.client)
            self.qdrant = None


async def open_stores(
    config: ServiceConfig,
    pool: asyncpg.Pool,
    *,
    exact_max_rows: int = DEFAULT_EXACT_MAX_ROWS,
) -> VectorStores:
    """pgvector on ``pool``; plus Qdrant when ``config.qdrant.url`` is set. Connects lazily."""
    pg = PgVectorStore(pool, exact_max_rows=exact_max_rows)
    if not config.qdrant.configured:
        return VectorStores(pgvector=pg)
    from .qdrant import QdrantStore

    client, key = _client(config.qdrant)
    store = QdrantStore(client, config.qdrant.collection, quantization=config.qdrant.quantization)
    return VectorStores(pgvector=pg, qdrant=store, _qdrant_key=key)


def _client(cfg: QdrantConfig) -> tuple[AsyncQdrantClient, str | None]:
    from qdrant_client import AsyncQdrantClient

    url = cfg.url or ""
    if url.startswith(("http://", "https://")):
        # no version probe: it is a blocking HTTP call inside the constructor
        client = AsyncQdrantClient(url=url, api_key=cfg.api_key, timeout=10, check_compatibility=False)
        return client, None
    key = url
    shared = _LOCAL.get(key)
    if shared is not None:
        _LOCAL[key] = (shared[0], shared[1] + 1)
        return shared[0], key
    client = AsyncQdrantClient(location=url) if url == ":memory:" else AsyncQdrantClient(path=url)
    _LOCAL[key] = (client, 1)
    return client, key


async def _release(key: str | None, client: AsyncQdrantClient) -> None:
    if key is None:
        await client.close()
        return
    shared = _LOCAL.get(key)
    if shared is None:
        return
    if shared[1] > 1:
        _LOCAL[key] = (shared[0], shared[1] - 1)
        return
    del _LOCAL[key]
    await client.close()
