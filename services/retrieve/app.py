"""Wiring of the retrieve service: engine, endpoints, health checks, the touch loop.

Endpoints (queue group ``memoryd-retrieve``): ``retrieve``, ``inject``, ``engine.status``.
Health: one check per vector store, and with ``deep=True`` a create -> retrieve -> delete
round trip. Settings come from ``MEMORYD_RETRIEVE_*`` (``EngineConfig``) and, per owner,
from the runtime settings (cached, dropped on ``mem.v1.settings.changed``).
"""

from __future__ import annotations

import os

from shared.config import load
from shared.schemas import RPC_OPS
from shared.service import ServiceContext
from shared.settings_cache import SettingsCache
from shared.vectors.registry import open_stores

from . import injection
from .engine import Engine, EngineConfig
from .handlers import Handlers
from .status import round_trip, store_check
from .touch import Toucher

NEEDS_DB = True


async def setup(ctx: ServiceContext) -> None:
    """Register the retrieve service's endpoints, checks and background loops."""
    config = load(EngineConfig, "MEMORYD_RETRIEVE_", os.environ)
    settings = SettingsCache(ctx.db, ttl_s=config.settings_ttl_s)
    await settings.start(ctx.nc)
    ctx.closers.append(settings.stop)
    opened = await open_stores(ctx.config, ctx.db)
    ctx.closers.append(opened.close)
    stores = [s for s in (opened.qdrant, opened.pgvector) if s is not None]  # search order: Qdrant first
    toucher = Toucher(ctx.db, interval_s=config.touch_interval_s)
    ctx.spawn(toucher.run(ctx.stop), "retrieve-touch")
    ctx.closers.append(toucher.flush_logged)  # what requests drained after the loop stopped queued
    engine = Engine(pool=ctx.db, nc=ctx.nc, stores=stores, settings=settings.get, toucher=toucher, config=config)
    providers = frozenset(p.strip().lower() for p in config.no_system_providers.split(",") if p.strip())
    handlers = Handlers(engine, ctx.js, providers or injection.DEFAULT_NO_SYSTEM_PROVIDERS)
    for store in stores:
        ctx.checks[f"vector_{store.name}"] = store_check(engine, store)
    ctx.deep_checks["round_trip"] = round_trip(engine)
    await ctx.rpc.add(RPC_OPS["retrieve"], handlers.retrieve)
    await ctx.rpc.add(RPC_OPS["inject"], handlers.inject)
    await ctx.rpc.add(RPC_OPS["engine.status"], handlers.engine_status)
