"""Wiring of the ingest service: the chat-event consumer and the memory API on the shared lifecycle.

Settings (``MEMORYD_INGEST_*``): ``batch`` (events fetched and handled concurrently per
pull), ``activity_interval_s`` (at most one activity announcement per owner per
interval; the sleep scheduler counts idleness in minutes) and ``settings_ttl_s`` (how
long an owner's runtime settings are cached; changes announced on
``mem.v1.settings.changed`` apply at once) and ``cleanup_interval_s`` (retention cleanup
period, one replica at a time; 0 = only on request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec

from memoryd.schemas import RPC_OPS
from memoryd.schemas.events import ChatEvent
from services.ingest.adapters.nats import Publisher, purge_dead_letters
from services.ingest.adapters.stores import MemoryStores
from services.ingest.handlers.batch import BatchApi
from services.ingest.handlers.chat import ChatIngestor
from services.ingest.handlers.dlq import DlqApi
from services.ingest.handlers.lifecycle import LifecycleApi
from services.ingest.handlers.memory import MemoryApi
from services.ingest.handlers.settings import SettingsApi
from services.ingest.logic.chat import ActivityThrottle
from shared.bus.consumer import PullConsumer, consumer_spec
from shared.bus.provision import ensure_activity_bucket
from shared.llm import LlmClient
from shared.observability.metrics import CONSUMER, DLQ_REPLAYED, EVENTS, LLM, TURNS
from shared.service import ServiceContext
from shared.settings.cache import SettingsCache
from shared.settings.engine import EMBED_ENV_PREFIX, EmbeddingConfig, EngineChoice
from shared.settings.env import load
from shared.settings.global_row import open_global_row, reseal_global_row
from shared.settings.watch import follow_global_settings
from shared.vectors.open_stores import LiveStores

NEEDS_DB = True
#: Metric families served besides the runtime and RPC ones (consumes chat events; summarize asks the LLM).
METRICS = (*CONSUMER, *LLM, EVENTS, TURNS, DLQ_REPLAYED)


class IngestSettings(msgspec.Struct, frozen=True, kw_only=True):
    #: chat events fetched and handled concurrently per pull
    batch: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 32
    #: at most one activity announcement per owner per interval (the sleep scheduler counts idleness in minutes)
    activity_interval_s: Annotated[float, msgspec.Meta(ge=0)] = 1.0
    #: how long an owner's runtime settings are cached (changes announced on `mem.v1.settings.changed` apply at
    #: once)
    settings_ttl_s: Annotated[float, msgspec.Meta(ge=0)] = 30.0
    #: period of the retention cleanup, one replica at a time (0 = only on request)
    cleanup_interval_s: Annotated[float, msgspec.Meta(ge=0)] = 3600.0


class IngestEnv(msgspec.Struct, frozen=True, kw_only=True):
    """What the ingest process reads from its environment beyond ``ServiceConfig``: its own
    knobs and the embedding source the settings API shows as the engine defaults."""

    ingest: IngestSettings = IngestSettings()
    embedding: EmbeddingConfig = EmbeddingConfig()


INGEST_ENV_PREFIX = "MEMORYD_INGEST_"
#: the variables of this process, by prefix (``services.configuration`` documents them)
ENV = {INGEST_ENV_PREFIX: IngestSettings, EMBED_ENV_PREFIX: EmbeddingConfig}


def load_settings(env: Mapping[str, str]) -> IngestEnv:
    """``MEMORYD_INGEST_*`` and the ``MEMORYD_EMBED_*`` source fields (``ConfigError`` naming a bad one)."""
    return IngestEnv(
        ingest=load(IngestSettings, INGEST_ENV_PREFIX, env), embedding=load(EmbeddingConfig, EMBED_ENV_PREFIX, env)
    )


async def setup(ctx: ServiceContext) -> None:
    """Register the memory API endpoints and start the chat-event consumer."""
    own = ctx.own(IngestEnv)
    settings = own.ingest
    kv = await ensure_activity_bucket(ctx.js, ctx.config.nats.replicas)
    publisher = Publisher(ctx.nc, ctx.js, kv, ActivityThrottle(settings.activity_interval_s))
    await reseal_global_row(ctx.db, ctx.keyring)  # rows from before sealing: API keys encrypted now
    sealed_row, global_row = await open_global_row(ctx)  # API keys opened; health `secrets`
    live = LiveStores(ctx.config, ctx.db)
    ctx.closers.append(live.close)
    vectors = await live.open(global_row)
    stores = MemoryStores(ctx.db, vectors.external, vectors.pgvector)
    stores.dead_letters = lambda quotes: purge_dead_letters(ctx.js, quotes)

    async def follow_stores(values: dict[str, object]) -> None:  # deletes reach the Qdrant in use
        opened = await live.follow(values)
        if opened is not None:
            stores.external = opened.external

    spec = consumer_spec("ingest", ctx.config.nats, batch=settings.batch)
    cache = SettingsCache(ctx.db, ttl_s=settings.settings_ttl_s)
    await cache.start(ctx.nc)
    ctx.closers.append(cache.stop)
    memory_api = MemoryApi(stores, publisher, cache.get)
    await memory_api.register(ctx.rpc)
    await ctx.rpc.add(RPC_OPS["memory.batch"], BatchApi(memory_api, publisher).batch)
    llm = LlmClient(ctx.config.llm, ctx.db) if ctx.config.llm.configured else None
    if llm is not None:
        ctx.closers.append(llm.close)
    lifecycle = LifecycleApi(stores, vectors.pgvector, publisher, cache.get, llm)
    await ctx.rpc.add(RPC_OPS["memory.restore"], lifecycle.restore)
    await ctx.rpc.add(RPC_OPS["admin.memory.restore"], lifecycle.admin_restore)
    await ctx.rpc.add(RPC_OPS["summarize"], lifecycle.summarize)
    await ctx.rpc.add(RPC_OPS["cleanup"], lifecycle.cleanup)
    settings_api = SettingsApi(
        ctx.db, ctx.nc, EngineChoice(embedding=own.embedding, qdrant=ctx.config.qdrant), ctx.keyring
    )
    await follow_global_settings(ctx, follow_stores, global_row, sealed_row.read)
    await ctx.rpc.add(RPC_OPS["settings.get"], settings_api.get)
    await ctx.rpc.add(RPC_OPS["settings.put"], settings_api.put)
    dlq = DlqApi(ctx.js)
    for op, endpoint in (("list", dlq.list_letters), ("show", dlq.show), ("replay", dlq.replay), ("drop", dlq.drop)):
        await ctx.rpc.add(RPC_OPS[f"admin.dlq.{op}"], endpoint)
    if settings.cleanup_interval_s > 0:
        ctx.spawn(lifecycle.cleanup_periodically(settings.cleanup_interval_s, ctx.stop), "ingest-cleanup")
    consumer = PullConsumer(ctx.js, spec, ChatEvent, ChatIngestor(ctx.db, publisher, cache).handle)
    ctx.spawn(consumer.run(ctx.stop), "ingest-consumer")
