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
from dataclasses import dataclass

import msgspec
from nats.aio.client import Client

from memoryd.errors import DependencyDown
from memoryd.schemas.retrieval import EmbedResult
from services.retrieve.adapters.postgres import Visibility, fetch_rows, vector_search
from services.retrieve.adapters.postgres_touch import Toucher
from services.retrieve.app import DB_SESSION_STATE
from services.retrieve.engine import Engine, EngineConfig, SettingsGetter, fuse_lists
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.fusion import RankedList
from services.retrieve.logic.plan import MemoryRow, answer, boost
from services.retrieve.logic.plan import tier_of as credit_tier
from shared.db.pool import create_pool
from shared.settings.cache import SettingsCache
from shared.settings.env import PgConfig, load
from shared.settings.memory import MemorySettings
from shared.vectors.pgvector import PgVectorStore

#: An exact search never leaves a vector store's exact path (more rows than any owner has).
_NEVER_APPROXIMATE = 2**62


def exact_keywords(settings: SettingsGetter) -> SettingsGetter:
    """The owner's settings with every full-text match ranked: no candidate cap, no rare-term pruning."""

    async def get(owner: str) -> MemorySettings:
        found = await settings(owner)
        return msgspec.structs.replace(found, keyword_max_candidates=0, keyword_match_budget=0)

    return get


@contextlib.asynccontextmanager
async def in_process_engine(
    dsn: str, nc: Client, signature: str, vectors: Mapping[str, Sequence[float]], *, exact: bool = False
) -> AsyncIterator[Engine]:
    """An ``Engine`` (pgvector store) whose query vectors come from ``vectors``, over pools like
    the service's (``MEMORYD_PG_*`` size, ``DB_SESSION_STATE``, the rows' pool with generic
    plans), their connections opened up front.

    ``exact``: the reference answer for recall: every full-text match ranked (no candidate
    cap, no rare-term pruning) and exact vector distances (never an HNSW index)."""
    config = load(EngineConfig, "MEMORYD_RETRIEVE_", os.environ)
    size = load(PgConfig, "MEMORYD_PG_", os.environ).pool_max
    sized = PgConfig(dsn=dsn, pool_min=size, pool_max=size)
    pool = await create_pool(sized, session_state=DB_SESSION_STATE)
    rows_pool = await create_pool(sized, session_state=DB_SESSION_STATE, generic_plans=True)

    async def embed(text: str, _timeout: float, _owner: str) -> EmbedResult:
        vector = vectors.get(text)
        if vector is None:
            raise DependencyDown(f"no vector supplied for query {text[:40]!r}")
        return EmbedResult(vectors=[list(vector)], signature=signature, dim=len(vector))

    toucher = Toucher(pool, interval_s=config.touch_interval_s, granularity_s=config.touch_granularity_s)
    owner_settings = SettingsCache(pool, ttl_s=config.settings_ttl_s).get
    stop = asyncio.Event()
    touching = asyncio.create_task(toucher.run(stop))
    try:
        yield Engine(
            pool=pool,
            rows_pool=rows_pool,
            nc=nc,
            stores=[PgVectorStore(pool, exact_max_rows=_NEVER_APPROXIMATE) if exact else PgVectorStore(pool)],
            settings=exact_keywords(owner_settings) if exact else owner_settings,
            toucher=toucher,
            config=config,
            embedder=embed,
        )
    finally:
        stop.set()
        await touching
        await rows_pool.close()
        await pool.close()


#: The steps of a hybrid search ``Steps.run`` runs alone.
COMPONENTS = ("keyword", "vector", "rows", "rows_plain", "fusion")


class Steps:
    """Each step of the engine's hybrid search alone, for CPU per component (``COMPONENTS``).

    ``keyword`` and ``vector``: one search tier as hybrid runs it (``rrfDepth`` candidates);
    ``rows``: the fused candidates' rows with their turn positions (``fetch_rows``);
    ``rows_plain``: the same rows without turn positions (``rows`` minus this is what the
    neighbour boost costs in SQL);
    ``fusion``: the Python between the tiers (fusion, boosts, the answer). The inputs of
    ``rows`` and ``fusion`` are computed once per (owner, query), on first use.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._inputs: dict[tuple[str, str], _Inputs] = {}

    async def run(self, tier: str, owner: str, query: str) -> int:
        """Run one step; return how many candidates (or results) it produced."""
        engine = self.engine
        settings = await engine.settings(owner)
        vis = Visibility(owner, None, None, settings.retention_days)
        depth = settings.rrf_depth
        if tier == "keyword":
            return len((await engine.keyword_ranking(vis, query, depth, settings)).ranked)
        if tier == "vector":
            result = await engine.embedder(query, engine.config.embed_timeout_s, owner)
            return len(await vector_search(engine.stores[0], result.signature, vis, result.vectors[0], depth))
        got = await self._prepared(owner, query, vis, settings)
        if tier in ("rows", "rows_plain"):
            return len(await fetch_rows(engine.rows_pool, vis, got.ids, turns=tier == "rows"))
        fused = fuse_lists({"fts": got.fts.ranked, "vec": got.vec}, settings, query, got.fts.cover)
        ranked = boost(
            fused,
            got.rows,
            settings.session_boost,
            settings.neighbour_boost,
            settings.speaker_boost,
            query,
            settings.temporal_boost,
            settings.temporal_reasoning,
        )
        memories, _tokens = answer(
            ranked, got.rows, limit=10, max_tokens=settings.max_tokens, tier=lambda f: credit_tier(f, "pgvector")
        )
        return len(memories)

    async def _prepared(self, owner: str, query: str, vis: Visibility, settings: MemorySettings) -> _Inputs:
        key = (owner, query)
        if key not in self._inputs:
            engine = self.engine
            fts = await engine.keyword_ranking(vis, query, settings.rrf_depth, settings)
            result = await engine.embedder(query, engine.config.embed_timeout_s, owner)
            vec = await vector_search(engine.stores[0], result.signature, vis, result.vectors[0], settings.rrf_depth)
            ids = [f.memory_id for f in fuse_lists({"fts": fts.ranked, "vec": vec}, settings, query, fts.cover)]
            self._inputs[key] = _Inputs(fts, vec, ids, await fetch_rows(engine.rows_pool, vis, ids, turns=True))
        return self._inputs[key]


@dataclass(frozen=True)
class _Inputs:
    fts: KeywordRanking
    vec: RankedList
    ids: list[str]
    rows: dict[str, MemoryRow]
