"""Publishing ``EmbedJob``s: the one place that sets their dedupe id and trace context.

Every writer of memory content (ingest, extract, sleep, and embed's own requeue and reindex)
queues re-embedding here. The ``Nats-Msg-Id`` is ``embed_msg_id(memory_id, content_hash)``
unless the caller names another (reindex) or none (a requeue that must pass the dedupe window).
Jobs are published concurrently in bounded chunks; a NATS failure is ``DependencyDown``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Final

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import PubAck

from memoryd import tracing
from memoryd.codec import encode
from memoryd.errors import DependencyDown
from memoryd.schemas import EmbedJob
from memoryd.subjects import EMBED_JOBS, MSG_ID_HEADER, embed_msg_id

#: How many publishes are in flight at once.
CONCURRENT_PUBLISHES: Final = 64

MsgId = Callable[[EmbedJob], str | None]


def content_msg_id(job: EmbedJob) -> str:
    """The default dedupe id: one job per memory and content hash."""
    return embed_msg_id(job.memory_id, job.content_hash)


def no_msg_id(job: EmbedJob) -> None:
    """No dedupe id: the job is queued even when one for the same content was seen."""
    return None


async def publish_embed_jobs(
    js: JetStreamContext, jobs: Sequence[EmbedJob], *, msg_id: MsgId = content_msg_id, timeout: float = 5.0
) -> list[PubAck]:
    """Publish ``jobs`` to ``mem.v1.jobs.embed``, carrying the current trace; their acks in order."""
    acks: list[PubAck] = []
    for start in range(0, len(jobs), CONCURRENT_PUBLISHES):
        chunk = jobs[start : start + CONCURRENT_PUBLISHES]
        acks.extend(await asyncio.gather(*(_publish(js, job, msg_id(job), timeout) for job in chunk)))
    return acks


async def _publish(js: JetStreamContext, job: EmbedJob, msg_id: str | None, timeout: float) -> PubAck:
    headers = tracing.inject({} if msg_id is None else {MSG_ID_HEADER: msg_id})
    try:
        return await js.publish(EMBED_JOBS, encode(job), headers=headers or None, timeout=timeout)
    except (nats.errors.Error, TimeoutError) as exc:  # e.g. the jobs stream at its byte limit
        raise DependencyDown(f"cannot publish to {EMBED_JOBS}: {type(exc).__name__}: {exc}") from exc
