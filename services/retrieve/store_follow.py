"""The retrieve service follows the engine settings at run time: which stores it searches.

``vectorStore`` (``shared.settings.engine``): ``auto`` = Qdrant first when one is configured, else
pgvector; ``qdrant`` = Qdrant first (a URL is required), pgvector serving while it is down, of the
wrong dimension or backfilling, with the reason in the fallbacks; ``pgvector`` = pgvector only.
On a change the stores are reopened (``LiveStores``) and swapped into the engine with their search
order, a fresh circuit breaker, the ``vector_*`` health checks and a dropped ``memory_vec_meta``
cache. A Qdrant attached at run time is searched only once the embed service has prepared it (its
``memory_vec_meta`` row describes this location, ``engine_settings.reattached``); until then it
answers ``store_down`` and pgvector serves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping
from typing import Any, cast

from memoryd.errors import DependencyDown
from services.retrieve.adapters import postgres_status
from services.retrieve.engine import Engine
from services.retrieve.logic.breaker import Breaker
from services.retrieve.status import store_check
from shared.periodic import wait_or_stop
from shared.service import ServiceContext
from shared.settings.engine import qdrant_location, reattached
from shared.vectors.open_stores import LiveStores
from shared.vectors.port import StoreStatus, VectorHit, VectorQuery, VectorStore
from shared.vectors.registry import VectorStores

UNPREPARED = "attached at run time; waiting for the embed service to prepare it"


def search_order(stores: VectorStores) -> list[VectorStore]:
    """Qdrant (when in use) first, then pgvector."""
    return [s for s in (stores.qdrant, stores.pgvector) if s is not None]


class Unprepared:
    """A store attached at run time that the embed service has not prepared yet: not searched."""

    def __init__(self, store: VectorStore) -> None:
        self._store = store
        self.name = store.name

    def __getattr__(self, item: str) -> Any:
        return getattr(self._store, item)

    async def search(self, signature: str, query: VectorQuery) -> list[VectorHit]:
        raise DependencyDown(f"{self.name} {UNPREPARED}")

    async def status(self, signature: str) -> StoreStatus:
        return StoreStatus(name=self.name, healthy=False, signature=signature, detail=UNPREPARED)


class StoreFollower:
    def __init__(self, ctx: ServiceContext, engine: Engine, live: LiveStores, *, poll_s: float = 0.25) -> None:
        self.ctx = ctx
        self.engine = engine
        self.live = live
        self.poll_s = poll_s
        self._waiting: VectorStores | None = None  # opened with a Qdrant not prepared yet
        self._wake = asyncio.Event()

    async def apply(self, global_values: Mapping[str, Any]) -> None:
        """Swap in new stores when the global row changed the Qdrant in use."""
        opened = await self.live.follow(global_values)
        if opened is None:
            return
        self._waiting = None
        if opened.qdrant is not None and not await self._prepared():
            self._waiting = opened
            self._wake.set()
        self.use(opened)

    async def run(self, stop: asyncio.Event) -> None:
        """While a Qdrant attached at run time waits for the embed service, check every ``poll_s``."""
        while not stop.is_set():
            if self._waiting is None:
                self._wake.clear()
                await _first(self._wake.wait(), stop.wait())
                continue
            waiting = self._waiting
            with contextlib.suppress(Exception):  # Postgres away: check again next round
                if await self._prepared() and self._waiting is waiting:
                    self._waiting = None
                    self.use(waiting)
            await wait_or_stop(stop, self.poll_s)

    async def _prepared(self) -> bool:
        qdrant = self.live.qdrant
        if qdrant is None:
            return True
        details = await postgres_status.qdrant_details(self.engine.pool)
        return details is not None and not reattached(details, qdrant_location(qdrant))

    def use(self, opened: VectorStores) -> None:
        engine, cfg = self.engine, self.engine.config
        stores = search_order(opened)
        if self._waiting is opened and opened.qdrant is not None:
            stores = [cast(VectorStore, Unprepared(opened.qdrant)), opened.pgvector]
        for store in stores:
            if store.name != "pgvector" or store.name not in engine.breakers:
                engine.breakers[store.name] = Breaker(cfg.breaker_threshold, cfg.breaker_cooldown_s)
        engine.stores = stores
        engine.meta.invalidate()
        checks = self.ctx.checks
        for name in [n for n in checks if n.startswith("vector_")]:
            del checks[name]
        for store in stores:
            checks[f"vector_{store.name}"] = store_check(engine, store)


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    """Return when the first of ``waits`` is done (the others are cancelled)."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
