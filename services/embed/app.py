"""Wiring of the embed service: the source, the stores, the job consumers and the two RPCs.

- `pipeline` pull loops share the one durable consumer `embed` (with every other worker
  process) and feed one job batcher; each batch is read, embedded and written, then its
  messages are acked;
- `mem.v1.rpc.embed` answers query embeddings (cache + batching), with the signature
  retrieval searches: during a signature change that is still the old one, while this process
  can build its source;
- `mem.v1.rpc.reindex` queues the backfill and reports progress; a watcher switches the
  active signature when nothing is pending and drops retired vectors later;
- health: `embedder` says which source was resolved and why.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from shared.bus.consumer import ConsumerSpec, PullConsumer
from shared.config import load
from shared.observability.logging import get_logger
from shared.schemas import RPC_OPS, EmbedJob
from shared.service import ServiceContext
from shared.subjects import EMBED_CONSUMER, EMBED_JOBS, JOBS_STREAM
from shared.vectors.registry import open_stores

from .cache import VectorCache
from .handlers import Jobs, Queries
from .reindex import Signatures
from .settings import EmbedSettings
from .sources import EmbedSource, Inference, build_source, source_for_signature

NEEDS_DB = True
log = get_logger(__name__)


async def setup(ctx: ServiceContext) -> None:
    """Register the embed service's endpoints and consumers (health comes from the runtime)."""
    settings = load(EmbedSettings, "MEMORYD_EMBED_", os.environ)
    cache_dir = settings.cache_dir(os.environ.get("MEMORYD_DATA_DIR"))
    inference = Inference()
    ctx.closers.append(lambda: asyncio.to_thread(inference.shutdown))
    source = await asyncio.to_thread(build_source, settings, inference, cache_dir)
    ctx.closers.append(source.close)

    vector_stores = await open_stores(ctx.config, ctx.db)
    ctx.closers.append(vector_stores.close)
    stores = vector_stores.all
    info = {
        "source": source.kind,
        "model": source.model,
        "dim": source.dim,
        "quantization": source.quantization,
        "resolution": source.resolution,
        "configured_signature": source.signature,  # of the worker that started last
    }
    sigs = Signatures(
        ctx.db, ctx.js, stores, source.signature, source.dim, info, retire_grace_s=settings.retire_grace_s
    )
    await sigs.prepare()

    queries = Queries(
        await _query_source(sigs, source, settings, inference, cache_dir),
        VectorCache(settings.cache_size, settings.cache_ttl_s),
        batch_max=settings.query_batch_max,
        wait_s=settings.query_wait_ms / 1000,
    )
    jobs = Jobs(
        ctx.db,
        ctx.js,
        stores,
        source,
        batch_max=settings.batch_max,
        batch_wait_s=settings.batch_wait_ms / 1000,
        pipeline=settings.pipeline,
    )
    ctx.closers.append(queries.close)
    ctx.closers.append(jobs.batcher.close)

    await ctx.rpc.add(RPC_OPS["embed"], queries.embed)
    await ctx.rpc.add(RPC_OPS["reindex"], sigs.reindex)
    spec = ConsumerSpec(
        stage="embed",
        stream=JOBS_STREAM,
        durable=EMBED_CONSUMER,
        subject=EMBED_JOBS,
        max_deliver=ctx.config.nats.max_deliver,
        ack_wait_s=ctx.config.nats.ack_wait_s,
        batch=settings.batch_max,
    )
    for i in range(settings.pipeline):
        ctx.spawn(PullConsumer(ctx.js, spec, EmbedJob, jobs.handle).run(ctx.stop), f"embed-jobs-{i}")

    async def on_tick() -> None:
        if sigs.active == source.signature and queries.source is not source:
            old = queries.source
            queries.use(source)
            log.info("embed.query_source_switched", signature=source.signature)
            await old.close()

    ctx.spawn(sigs.watch(ctx.stop, settings.meta_poll_s, on_tick), "embed-signatures")

    async def embedder_health() -> str:
        status = source.health()
        if sigs.changing:
            status += f"; reindex to {source.signature} pending, queries use {queries.source.signature}"
        return status

    ctx.checks["embedder"] = embedder_health


async def _query_source(
    sigs: Signatures, source: EmbedSource, settings: EmbedSettings, inference: Inference, cache_dir: Path
) -> EmbedSource:
    """The source of the active signature while a change is pending (if buildable), else `source`."""
    active = sigs.active
    if active is None or active == source.signature:
        return source
    legacy = await asyncio.to_thread(source_for_signature, active, settings, inference, cache_dir)
    if legacy is None:
        log.warning(
            "embed.active_signature_unavailable",
            active=active,
            configured=source.signature,
            detail="query vectors use the new signature; vector search waits for the reindex",
        )
        return source
    return legacy
