"""A process's open vector stores, following the Qdrant in use at run time.

The Qdrant in use is the environment's (``MEMORYD_QDRANT_*``) under the global settings
row (``shared.settings.engine``: ``qdrantUrl``, ``qdrantCollection``, ...; none at all with
``vectorStore=pgvector``). ``open`` gives the first ``VectorStores``; ``follow`` opens new
ones when a changed row changes that Qdrant, and returns them for the caller to swap in.
The replaced stores are closed ``grace_s`` later, so a request still holding them finishes
first; ``close`` closes everything at shutdown. A row that cannot be read as engine
settings keeps what is open (said in the log).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import asyncpg
import msgspec

from memoryd.errors import ValidationFailed
from shared.observability.logging import get_logger
from shared.settings.engine import qdrant_in_use
from shared.settings.env import QdrantConfig, ServiceConfig
from shared.vectors.registry import VectorStores, open_stores

log = get_logger(__name__)


async def open_for(config: ServiceConfig, pool: asyncpg.Pool, qdrant: QdrantConfig | None) -> VectorStores:
    """``open_stores`` with ``qdrant`` (None: pgvector only) instead of ``config.qdrant``."""
    return await open_stores(msgspec.structs.replace(config, qdrant=qdrant or QdrantConfig()), pool)


class LiveStores:
    def __init__(self, config: ServiceConfig, pool: asyncpg.Pool, *, grace_s: float = 5.0) -> None:
        self._config = config
        self._pool = pool
        self._grace_s = grace_s
        self._qdrant: QdrantConfig | None = None
        self._current: VectorStores | None = None
        self._retiring: dict[asyncio.Task[None], VectorStores] = {}

    @property
    def qdrant(self) -> QdrantConfig | None:
        """The Qdrant in use (None: pgvector only)."""
        return self._qdrant

    @property
    def current(self) -> VectorStores:
        assert self._current is not None, "open() first"
        return self._current

    async def open(self, global_values: Mapping[str, Any]) -> VectorStores:
        """pgvector, plus the Qdrant in use (the environment's when the row is unreadable)."""
        env = self._config.qdrant if self._config.qdrant.configured else None
        self._qdrant = self._wanted(global_values, env)
        self._current = await open_for(self._config, self._pool, self._qdrant)
        return self._current

    async def follow(self, global_values: Mapping[str, Any]) -> VectorStores | None:
        """New stores when the row changes the Qdrant in use (the old ones retire), else None."""
        wanted = self._wanted(global_values, self._qdrant)
        if wanted == self._qdrant and self._current is not None:
            return None
        old = self._current
        self._current = await open_for(self._config, self._pool, wanted)
        self._qdrant = wanted
        if old is not None:
            self._retire(old)
        log.info("vectors.stores_reopened", qdrant=wanted.url if wanted else None)
        return self._current

    def _wanted(self, global_values: Mapping[str, Any], otherwise: QdrantConfig | None) -> QdrantConfig | None:
        try:
            return qdrant_in_use(self._config.qdrant, global_values)
        except ValidationFailed as exc:
            log.warning("vectors.engine_settings_unreadable", error=exc.description)
            return otherwise

    def _retire(self, stores: VectorStores) -> None:
        async def later() -> None:
            await asyncio.sleep(self._grace_s)
            with contextlib.suppress(Exception):
                await stores.close()

        task = asyncio.get_running_loop().create_task(later())
        self._retiring[task] = stores
        task.add_done_callback(lambda t: self._retiring.pop(t, None))

    async def close(self) -> None:
        for task, stores in list(self._retiring.items()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            await stores.close()  # idempotent: stores closed by their task hold no client any more
        self._retiring.clear()
        if self._current is not None:
            await self._current.close()
            self._current = None
