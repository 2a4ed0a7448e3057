"""Wiring of the retrieve service: engine, endpoints, health checks, the touch loop.

The candidates' rows are read through a second pool that keeps generic plans
(``generic_plans``); every other statement is planned per execution. Endpoints (queue group
``memoryd-retrieve``): ``retrieve``, ``inject``, ``engine.status``.
Health: one check per vector store, and with ``deep=True`` a create -> retrieve -> delete
round trip. Settings come from ``MEMORYD_RETRIEVE_*`` (``EngineConfig``, read once by
``__main__`` through ``load_settings``) and, per owner,
from the runtime settings (cached, dropped on ``mem.v1.settings.changed``). The vector stores
follow the engine settings of the global row at run time (``store_follow.py``); the optional LLM
rerank (``rerank.py``, ``MEMORYD_RETRIEVE_RERANK_*``) uses the LLM of ``MEMORYD_LLM_*``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from threadpoolctl import threadpool_limits

from memoryd.schemas import RPC_OPS
from services.retrieve.adapters.postgres_touch import Toucher
from services.retrieve.adapters.reads import ReadAnnouncer
from services.retrieve.logic import injection
from services.retrieve.store_follow import StoreFollower, search_order
from shared.bus.provision import ensure_activity_bucket
from shared.db.pool import create_pool
from shared.llm import LlmClient
from shared.observability.metrics import (
    LLM,
    QUEUE_LAG,
    RETRIEVE_FALLBACKS,
    RETRIEVE_KEYWORD_TIER,
    RETRIEVE_RESULTS,
    RETRIEVE_SECONDS,
)
from shared.service import ServiceContext
from shared.settings.cache import SettingsCache
from shared.settings.env import load, refuse_retired
from shared.settings.global_row import open_global_row
from shared.settings.watch import follow_global_settings
from shared.vectors.open_stores import LiveStores

from .engine import Engine, EngineConfig
from .handlers import Handlers
from .rerank import RerankConfig, Reranker
from .status import round_trip

NEEDS_DB = True
#: Metric families served besides the runtime and RPC ones (engine.status reports queue lag; rerank asks the LLM).
METRICS = (*LLM, QUEUE_LAG, RETRIEVE_SECONDS, RETRIEVE_FALLBACKS, RETRIEVE_RESULTS, RETRIEVE_KEYWORD_TIER)
#: Every query is a single statement or a closed transaction: no session SET, LISTEN, advisory
#: lock or cursor outlives it, so the pool skips its reset query (``db.pool.create_pool``).
DB_SESSION_STATE = False

ENGINE_ENV_PREFIX = "MEMORYD_RETRIEVE_"
RERANK_ENV_PREFIX = "MEMORYD_RETRIEVE_RERANK_"
#: the variables of this process, by prefix (``services.configuration`` documents them)
ENV = {ENGINE_ENV_PREFIX: EngineConfig, RERANK_ENV_PREFIX: RerankConfig}
#: variables that became runtime settings per owner
RETIRED = {
    "MEMORYD_RETRIEVE_SESSION_BOOST": "sessionBoost",
    "MEMORYD_RETRIEVE_NEIGHBOUR_BOOST": "neighbourBoost",
    "MEMORYD_RETRIEVE_FTS_WEIGHT": "ftsWeight",
    "MEMORYD_RETRIEVE_VEC_WEIGHT": "vecWeight",
    "MEMORYD_RETRIEVE_KEYWORD_MAX_CANDIDATES": "keywordMaxCandidates",
    "MEMORYD_RETRIEVE_KEYWORD_MATCH_BUDGET": "keywordMatchBudget",
    "MEMORYD_RETRIEVE_KEYWORD_WIDEN_BELOW": "keywordWidenBelow",
}


class RetrieveEnv(msgspec.Struct, frozen=True, kw_only=True):
    """What the retrieve process reads from its environment beyond ``ServiceConfig``."""

    engine: EngineConfig = EngineConfig()
    rerank: RerankConfig = RerankConfig()


def load_settings(env: Mapping[str, str]) -> RetrieveEnv:
    """``MEMORYD_RETRIEVE_*`` and ``MEMORYD_RETRIEVE_RERANK_*`` (``ConfigError`` naming a bad one)."""
    refuse_retired(env, RETIRED)
    return RetrieveEnv(
        engine=load(EngineConfig, ENGINE_ENV_PREFIX, env), rerank=load(RerankConfig, RERANK_ENV_PREFIX, env)
    )


async def setup(ctx: ServiceContext) -> None:
    """Register the retrieve service's endpoints, checks and background loops."""
    own = ctx.own(RetrieveEnv)
    config = own.engine
    # the held vectors' products (``logic.held_vectors``) on one BLAS thread: more threads spin
    # between searches, and cost more CPU than the product itself (``bench latency``)
    threadpool_limits(limits=1, user_api="blas")
    settings = SettingsCache(ctx.db, ttl_s=config.settings_ttl_s)
    await settings.start(ctx.nc)
    ctx.closers.append(settings.stop)
    sealed_row, global_row = await open_global_row(ctx)  # API keys opened; health `secrets`
    live = LiveStores(ctx.config, ctx.db, grace_s=2 * config.store_timeout_s)
    ctx.closers.append(live.close)
    stores = search_order(await live.open(global_row))  # search order: Qdrant first
    toucher = Toucher(ctx.db, interval_s=config.touch_interval_s, granularity_s=config.touch_granularity_s)
    ctx.spawn(toucher.run(ctx.stop), "retrieve-touch")
    ctx.closers.append(toucher.flush_logged)  # what requests drained after the loop stopped queued
    rows_pool = await create_pool(ctx.config.pg, session_state=DB_SESSION_STATE, generic_plans=True)
    ctx.closers.append(rows_pool.close)
    engine = Engine(
        pool=ctx.db,
        rows_pool=rows_pool,
        nc=ctx.nc,
        stores=stores,
        settings=settings.get,
        toucher=toucher,
        config=config,
    )
    ctx.closers.append(engine.keyword_indexes.close)
    providers = frozenset(p.strip().lower() for p in config.no_system_providers.split(",") if p.strip())
    reads = ReadAnnouncer(ctx.nc, await ensure_activity_bucket(ctx.js))
    ctx.closers.append(reads.close)
    handlers = Handlers(engine, ctx.js, providers or injection.DEFAULT_NO_SYSTEM_PROVIDERS, reads)
    llm = LlmClient(ctx.config.llm, ctx.db) if ctx.config.llm.configured else None
    if llm is not None:
        ctx.closers.append(llm.close)
    engine.reranker = Reranker(llm, own.rerank, engine.fallbacks)
    follower = StoreFollower(ctx, engine, live)
    follower.use(live.current)  # the health checks of the stores
    ctx.spawn(follower.run(ctx.stop), "retrieve-store-follower")
    await follow_global_settings(ctx, follower.apply, global_row, sealed_row.read)
    ctx.deep_checks["round_trip"] = round_trip(engine)
    await ctx.rpc.add(RPC_OPS["retrieve"], handlers.retrieve)
    await ctx.rpc.add(RPC_OPS["inject"], handlers.inject)
    await ctx.rpc.add(RPC_OPS["engine.status"], handlers.engine_status)
