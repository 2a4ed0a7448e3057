"""Recovery of memories whose embed job was lost.

A memory that needs a vector has an embed job on ``mem.v1.jobs.embed``, unless publishing it
failed after the memory was committed (the jobs stream full or NATS away at that moment: API
writes, sleep changes). Such a memory would wait for a manual ``memoryd reindex``. Every
``sweep_interval_s`` each embed worker checks the ``embed`` durable: when nothing is queued or
in flight, every memory that has needed a vector for over ``sweep_min_age_s`` lost its job, and
gets a reindex job (``Signatures.sweep``). Replicas sweeping at once publish the same message
ids, which the jobs stream deduplicates.
"""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from memoryd.subjects import EMBED_CONSUMER, JOBS_STREAM
from shared.observability.logging import get_logger
from shared.periodic import every

from .reindex import Signatures

log = get_logger(__name__)
SWEEP_BATCH = 500


async def queue_idle(js: JetStreamContext) -> bool:
    """Whether the embed durable has nothing waiting and nothing in flight."""
    info = await js.consumer_info(JOBS_STREAM, EMBED_CONSUMER)
    return int(info.num_pending or 0) == 0 and int(info.num_ack_pending or 0) == 0


async def sweep_lost_jobs(
    js: JetStreamContext, sigs: Signatures, stop: asyncio.Event, interval_s: float, min_age_s: float
) -> None:
    """Every ``interval_s`` until ``stop``: queue the memories whose embed job was lost."""

    async def sweep() -> None:
        if not await queue_idle(js):
            return
        queued = await sigs.sweep(min_age_s, SWEEP_BATCH)
        if queued:
            log.info("embed.sweep_queued", queued=queued, min_age_s=min_age_s)

    await every(interval_s, stop, sweep, failed="embed.sweep_failed", wait_first=True)
