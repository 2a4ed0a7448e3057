"""The retrieve engine inside a caller's process: the latency benchmark's floor.

The benchmark compares the service (a ``retrieve`` request over NATS, the query embedded by
the embed service) with the same engine run here: the same code, configuration
(``MEMORYD_RETRIEVE_*``), runtime settings and pool size, with the query vectors supplied by
the caller. The difference between the two is what the service adds (transport, encoding,
the embed round trip, the service's event loop), never a drifted copy of the search SQL.
The benchmark loads this module by name, as the test harness loads service apps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence

import msgspec
from nats.aio.client import Client

from services.retrieve.adapters.postgres import Visibility, vector_search
from services.retrieve.adapters.postgres_touch import Toucher
from services.retrieve.app import DB_SESSION_STATE
from services.retrieve.engine import Engine, EngineConfig
from shared.db.pool import create_pool
from shared.errors import DependencyDown
from shared.schemas.retrieval import EmbedResult
from shared.settings.cache import SettingsCache
from shared.settings.env import PgConfig, load
from shared.vectors.pgvector import PgVectorStore

#: An exact search never leaves a vector store's exact path (more rows than any owner has).
_NEVER_APPROXIMATE = 2**62


@contextlib.asynccontextmanager
async def in_process_engine(
    dsn: str, nc: Client, signature: str, vectors: Mapping[str, Sequence[float]], *, exact: bool = False
) -> AsyncIterator[Engine]:
    """An ``Engine`` (pgvector store) whose query vectors come from ``vectors``, over a pool
    like the service's (``MEMORYD_PG_*`` size, ``DB_SESSION_STATE``), its connections opened up front.

    ``exact``: the reference answer for recall: every full-text match ranked (no candidate
    cap, no rare-term pruning) and exact vector distances (never an HNSW index)."""
    config = load(EngineConfig, "MEMORYD_RETRIEVE_", os.environ)
    if exact:
        config = msgspec.structs.replace(config, keyword_max_candidates=0, keyword_match_budget=0)
    size = load(PgConfig, "MEMORYD_PG_", os.environ).pool_max
    pool = await create_pool(PgConfig(dsn=dsn, pool_min=size, pool_max=size), session_state=DB_SESSION_STATE)

    async def embed(text: str, _timeout: float) -> EmbedResult:
        vector = vectors.get(text)
        if vector is None:
            raise DependencyDown(f"no vector supplied for query {text[:40]!r}")
        return EmbedResult(vectors=[list(vector)], signature=signature, dim=len(vector))

    toucher = Toucher(pool, interval_s=config.touch_interval_s, granularity_s=config.touch_granularity_s)
    stop = asyncio.Event()
    touching = asyncio.create_task(toucher.run(stop))
    try:
        yield Engine(
            pool=pool,
            nc=nc,
            stores=[PgVectorStore(pool, exact_max_rows=_NEVER_APPROXIMATE) if exact else PgVectorStore(pool)],
            settings=SettingsCache(pool, ttl_s=config.settings_ttl_s).get,
            toucher=toucher,
            config=config,
            embedder=embed,
        )
    finally:
        stop.set()
        await touching
        await pool.close()


async def tier_alone(engine: Engine, tier: str, owner: str, query: str) -> int:
    """One search tier as hybrid runs it (``rrfDepth`` candidates), nothing else; hits found.

    ``keyword``: the full-text tier (with the engine's pruning); ``vector``: the query vector
    from the supplied ones, then the pgvector search.
    """
    settings = await engine.settings(owner)
    vis = Visibility(owner, None, None, settings.retention_days)
    depth = settings.rrf_depth
    if tier == "keyword":
        return len(await engine.keyword_ranking(vis, query, depth))
    result = await engine.embedder(query, engine.config.embed_timeout_s)
    return len(await vector_search(engine.stores[0], result.signature, vis, result.vectors[0], depth))
