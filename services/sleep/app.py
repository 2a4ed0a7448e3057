"""Wiring of the sleep service: the `sleep.run|status`, `conflicts.list|resolve` and
`entities.list|relations` RPCs, the run lanes (`lanes`), the scheduler.

Settings: `MEMORYD_SLEEP_*` (`config.SleepServiceConfig`); the LLM from `MEMORYD_LLM_*`
(none configured is normal: the LLM phases are skipped); the vector stores from the
shared registry (pgvector finds the candidate pairs; Qdrant, when in use, mirrors
state changes in its payload; the Qdrant in use follows the engine settings at run time).
"""

from __future__ import annotations

from collections.abc import Mapping

from threadpoolctl import threadpool_limits

from memoryd.schemas import RPC_OPS
from services.sleep.adapters.activity_kv import ActivityReader
from services.sleep.config import SleepServiceConfig
from services.sleep.context import Deps
from services.sleep.handlers import SleepApi
from services.sleep.lanes import Lanes, sleep_consumer
from services.sleep.review import ReviewApi
from services.sleep.scheduler import Scheduler
from shared.bus.provision import ensure_activity_bucket
from shared.llm import LlmClient
from shared.observability.metrics import CONSUMER, LLM, SLEEP_FAILURE_STREAK, SLEEP_RUNS
from shared.service import ServiceContext
from shared.settings.env import load, refuse_retired
from shared.settings.global_row import open_global_row
from shared.settings.watch import follow_global_settings
from shared.vectors.open_stores import LiveStores

NEEDS_DB = True
#: BLAS threads of this process. The pair pass (``shared.vectors.bulk_pairs``) is matrix
#: products; a second OpenBLAS thread spins for work on a busy machine: 100k memories took
#: 33.5 s of CPU on two threads against 9.2 s on one (load ~13 on 2 cores), in one sitting.
BLAS_THREADS = 1
#: Metric families served besides the runtime and RPC ones (consumes sleep jobs; the LLM phases).
METRICS = (*CONSUMER, *LLM, SLEEP_RUNS, SLEEP_FAILURE_STREAK)
SLEEP_ENV_PREFIX = "MEMORYD_SLEEP_"
#: the variables of this process, by prefix (``services.configuration`` documents them)
ENV = {SLEEP_ENV_PREFIX: SleepServiceConfig}


#: variables that became runtime settings (they change what a run does)
RETIRED = {
    "MEMORYD_SLEEP_NEIGHBOURS_PER_MEMORY": "sleepNeighboursPerMemory",
    "MEMORYD_SLEEP_FULL_SCAN_DAYS": "sleepFullScanDays",
    "MEMORYD_SLEEP_PATTERN_POOL": "sleepPatternPool",
    "MEMORYD_SLEEP_AFFECTIVE_POOL": "sleepAffectivePool",
    "MEMORYD_SLEEP_PROMPT_CHARS": "sleepPromptChars",
    "MEMORYD_SLEEP_RELATION_MIN_COUNT": "sleepRelationMinCount",
    "MEMORYD_SLEEP_RELATION_MAX_EDGES": "sleepRelationMaxEdges",
}


def load_settings(env: Mapping[str, str]) -> SleepServiceConfig:
    """``MEMORYD_SLEEP_*`` (``ConfigError`` naming a bad one, or a variable that became a setting)."""
    refuse_retired(env, RETIRED)
    return load(SleepServiceConfig, SLEEP_ENV_PREFIX, env)


async def setup(ctx: ServiceContext) -> None:
    """Register the sleep RPCs, start the job consumer and (unless disabled) the scheduler."""
    cfg = ctx.own(SleepServiceConfig)
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")
    kv = await ensure_activity_bucket(ctx.js, ctx.config.nats.replicas)
    llm = LlmClient(ctx.config.llm, ctx.db)
    ctx.closers.append(llm.close)
    sealed_row, global_row = await open_global_row(ctx)  # API keys opened; health `secrets`
    live = LiveStores(ctx.config, ctx.db)
    ctx.closers.append(live.close)
    stores = await live.open(global_row)
    deps = Deps(
        pool=ctx.db,
        js=ctx.js,
        nc=ctx.nc,
        cfg=cfg,
        llm=llm,
        pairs=stores.pgvector,
        mirrors=stores.external,
        activity=ActivityReader(kv),
        stop=ctx.stop,
    )

    async def follow_stores(values: dict[str, object]) -> None:
        opened = await live.follow(values)
        if opened is not None:
            deps.mirrors = opened.external

    await follow_global_settings(ctx, follow_stores, global_row, sealed_row.read)
    api = SleepApi(deps)
    await ctx.rpc.add(RPC_OPS["sleep.run"], api.run)
    await ctx.rpc.add(RPC_OPS["sleep.status"], api.status)
    review = ReviewApi(deps)
    await ctx.rpc.add(RPC_OPS["conflicts.list"], review.list)
    await ctx.rpc.add(RPC_OPS["conflicts.resolve"], review.resolve)
    await ctx.rpc.add(RPC_OPS["entities.list"], api.entities)
    await ctx.rpc.add(RPC_OPS["entities.relations"], api.relations)
    lanes = Lanes(ctx.db, ctx.js, cfg, sleep_consumer(cfg, ctx.config.nats), api.on_job)
    ctx.spawn(lanes.run(ctx.stop), "sleep-lanes")
    if cfg.scheduler:
        ctx.spawn(Scheduler(deps).run(ctx.stop), "sleep-scheduler")

    async def llm_route() -> str:
        return "ok" if llm.configured else "ok: no llm route (LLM phases are skipped)"

    ctx.checks["llm"] = llm_route
    await ctx.nc.flush()
