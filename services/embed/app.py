"""Wiring of the embed service: the source, the stores, the job consumers and the two RPCs.

- `pipeline` pull loops share the one durable consumer `embed` (with every other worker
  process) and feed one job batcher; each batch is read, embedded and written, then its
  messages are acked;
- `mem.v1.rpc.embed` answers query embeddings (cache + batching), with the signature
  retrieval searches: during a signature change that is still the old one, while this process
  can build its source;
- `mem.v1.rpc.reindex` queues the backfill and reports progress; a watcher switches the
  active signature when nothing is pending and drops retired vectors later;
- a sweep queues memories whose embed job was lost, while the queue is idle (`sweep.py`);
- health: `embedder` says which source was resolved and why;
- engine settings (source, model, quantization, Qdrant, vector store: the environment under
  the global settings row) are followed at run time by `live.EngineSwitch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import msgspec

from memoryd.schemas import RPC_OPS, EmbedJob
from services.embed.engine_switch import EngineSwitch, locations, source_info, startup_engine
from shared.bus.consumer import PullConsumer, consumer_spec
from shared.observability.metrics import CONSUMER, EMBED_BATCH, EMBED_CACHE, EMBED_SECONDS, EMBED_SKIPPED, EMBED_TEXTS
from shared.service import ServiceContext
from shared.settings.engine import EMBED_ENV_PREFIX
from shared.settings.env import DATA_ENV_PREFIX, DataConfig, load
from shared.settings.global_row import open_global_row
from shared.settings.watch import follow_global_settings
from shared.vectors.cache import VectorCache
from shared.vectors.open_stores import open_for

from .handlers import Jobs, Queries
from .owner_index import OwnerIndexes
from .reindex import Signatures
from .settings import EmbedSettings
from .sources import Inference, build_source
from .sweep import sweep_lost_jobs

NEEDS_DB = True
#: Metric families served besides the runtime and RPC ones (consumes embed jobs).
METRICS = (*CONSUMER, EMBED_BATCH, EMBED_SECONDS, EMBED_TEXTS, EMBED_SKIPPED, EMBED_CACHE)
#: the variables of this process, by prefix (``services.configuration`` documents them)
ENV = {EMBED_ENV_PREFIX: EmbedSettings, DATA_ENV_PREFIX: DataConfig}


class EmbedEnv(msgspec.Struct, frozen=True, kw_only=True):
    """What the embed process reads from its environment beyond ``ServiceConfig``."""

    embed: EmbedSettings = EmbedSettings()
    data: DataConfig = DataConfig()


def load_settings(env: Mapping[str, str]) -> EmbedEnv:
    """``MEMORYD_EMBED_*`` and ``MEMORYD_DATA_DIR`` (``ConfigError`` naming a bad one)."""
    return EmbedEnv(embed=load(EmbedSettings, EMBED_ENV_PREFIX, env), data=load(DataConfig, DATA_ENV_PREFIX, env))


async def setup(ctx: ServiceContext) -> None:
    """Register the embed service's endpoints and consumers (health comes from the runtime)."""
    own = ctx.own(EmbedEnv)
    env_settings = own.embed
    sealed_row, global_row = await open_global_row(ctx)  # API keys opened; health `secrets`
    choice = startup_engine(env_settings, ctx.config.qdrant, global_row)
    settings = choice.embedding
    cache_dir = settings.cache_dir(own.data.data_dir)
    inference = Inference(env_settings.inference_slots, env_settings.job_slots)
    ctx.closers.append(lambda: asyncio.to_thread(inference.shutdown))
    source = await asyncio.to_thread(build_source, settings, inference, cache_dir, choice.vector_quantization)
    vector_stores = await open_for(ctx.config, ctx.db, choice.qdrant_in_use)
    stores = vector_stores.all
    sigs = Signatures(
        ctx.db,
        ctx.js,
        stores,
        source.signature,
        source.dim,
        source_info(source),
        retire_grace_s=settings.retire_grace_s,
        locations=locations(choice),
    )
    await sigs.prepare()

    queries = Queries(
        source,
        VectorCache(settings.cache_size, settings.cache_ttl_s),
        batch_max=settings.query_batch_max,
        wait_s=settings.query_wait_ms / 1000,
        inflight=inference.slots,
    )
    owner_indexes = OwnerIndexes()
    jobs = Jobs(
        ctx.db,
        ctx.js,
        stores,
        source,
        batch_max=settings.job_batch_max,
        batch_wait_s=settings.batch_wait_ms / 1000,
        pipeline=settings.pipeline,
        owner_indexes=owner_indexes,
    )
    engine = EngineSwitch(
        config=ctx.config,
        pool=ctx.db,
        env=env_settings,
        choice=choice,
        source=source,
        stores=vector_stores,
        sigs=sigs,
        jobs=jobs,
        queries=queries,
        inference=inference,
        cache_dir=cache_dir,
    )
    ctx.closers.append(engine.close)
    ctx.closers.append(queries.close)
    ctx.closers.append(jobs.batcher.close)
    await engine.follow_active(build=True)  # a change pending: queries keep the active signature

    await ctx.rpc.add(RPC_OPS["embed"], queries.embed)
    await ctx.rpc.add(RPC_OPS["reindex"], sigs.reindex)
    spec = consumer_spec("embed", ctx.config.nats, batch=settings.job_batch_max)
    for i in range(settings.pipeline):
        ctx.spawn(PullConsumer(ctx.js, spec, EmbedJob, jobs.handle).run(ctx.stop), f"embed-jobs-{i}")
    ctx.spawn(sigs.watch(ctx.stop, settings.meta_poll_s, engine.tick), "embed-signatures")
    ctx.spawn(owner_indexes.run(ctx.stop), "embed-owner-indexes")
    if settings.sweep_interval_s > 0:
        sweep = sweep_lost_jobs(ctx.js, sigs, ctx.stop, settings.sweep_interval_s, settings.sweep_min_age_s)
        ctx.spawn(sweep, "embed-sweep")
    await follow_global_settings(ctx, engine.apply, global_row, sealed_row.read)

    async def embedder_health() -> str:
        status = engine.source.health()
        if sigs.changing:
            status += f"; reindex to {engine.source.signature} pending, queries use {queries.source.signature}"
        if engine.problem:
            status = f"degraded: {engine.problem}; running {status}"
        return status

    ctx.checks["embedder"] = embedder_health
