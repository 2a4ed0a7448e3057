"""Wiring of the extract service: the ``mem.v1.jobs.extract`` consumer and, when
``MEMORYD_LLM_*`` is configured, the LLM extractor.

Service settings (``MEMORYD_EXTRACT_*``): ``LLM`` (use the LLM extractor when an endpoint
is configured; default true), ``LLM_MAX_INPUT_BYTES`` (conversation text sent, cut to
its tail), ``LLM_MAX_TOKENS`` (reply limit), ``BATCH`` (jobs fetched and handled at
once), ``SETTINGS_TTL_S`` (runtime-settings cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec

from memoryd.schemas import ExtractJob
from services.extract.adapters.llm import LlmExtractor
from services.extract.logic.llm_facts import MAX_INPUT_BYTES
from shared.bus.consumer import JobContext, PullConsumer, consumer_spec
from shared.llm import LlmClient
from shared.observability.metrics import CONSUMER, EXTRACT_LLM_SKIPPED, FACTS, LLM
from shared.service import ServiceContext
from shared.settings.cache import SettingsCache
from shared.settings.env import load

from .handlers import ExtractDeps, handle_extract

NEEDS_DB = True
#: Metric families served besides the runtime and RPC ones (consumes extract jobs; the LLM extractor).
METRICS = (*CONSUMER, *LLM, FACTS, EXTRACT_LLM_SKIPPED)


class ExtractSettings(msgspec.Struct, frozen=True, kw_only=True):
    #: use the LLM extractor when an LLM endpoint is configured (else the rules alone)
    llm: bool = True
    #: conversation text sent to the LLM, cut to its tail
    llm_max_input_bytes: Annotated[int, msgspec.Meta(ge=256, le=1_048_576)] = MAX_INPUT_BYTES
    #: reply token limit of one extraction call
    llm_max_tokens: Annotated[int, msgspec.Meta(ge=16, le=32_768)] = 1024
    #: extract jobs fetched and handled at once
    batch: Annotated[int, msgspec.Meta(ge=1, le=256)] = 32
    #: how long an owner's runtime settings are cached (announced changes apply at once)
    settings_ttl_s: Annotated[float, msgspec.Meta(ge=0)] = 30.0


EXTRACT_ENV_PREFIX = "MEMORYD_EXTRACT_"
#: the variables of this process, by prefix (``services.configuration`` documents them)
ENV = {EXTRACT_ENV_PREFIX: ExtractSettings}


def load_settings(env: Mapping[str, str]) -> ExtractSettings:
    """``MEMORYD_EXTRACT_*`` (``ConfigError`` naming a bad one)."""
    return load(ExtractSettings, EXTRACT_ENV_PREFIX, env)


async def setup(ctx: ServiceContext) -> None:
    """Start the extract consumer (health comes from the runtime, plus an ``llm`` check)."""
    settings = ctx.own(ExtractSettings)
    cache = SettingsCache(ctx.db, ttl_s=settings.settings_ttl_s)
    await cache.start(ctx.nc)
    ctx.closers.append(cache.stop)

    extractor: LlmExtractor | None = None
    llm_cfg = ctx.config.llm
    if llm_cfg.configured and settings.llm:
        client = LlmClient(llm_cfg, ctx.db)
        ctx.closers.append(client.close)
        extractor = LlmExtractor(
            client, max_input_bytes=settings.llm_max_input_bytes, max_tokens=settings.llm_max_tokens
        )

    async def llm_check() -> str:
        return f"ok: {llm_cfg.model}" if extractor is not None else "ok: off"

    ctx.checks["llm"] = llm_check

    deps = ExtractDeps(pool=ctx.db, js=ctx.js, settings=cache.get, llm=extractor)

    async def handle(job: ExtractJob, _job_ctx: JobContext) -> None:
        await handle_extract(job, deps)

    spec = consumer_spec("extract", ctx.config.nats, batch=settings.batch)
    ctx.spawn(PullConsumer(ctx.js, spec, ExtractJob, handle).run(ctx.stop), "extract-consumer")
