"""What ingest publishes: ExtractJobs and EmbedJobs after a commit, owner activity, and the chat
events of ``memory.batch``.

Every JetStream publish carries a ``Nats-Msg-Id`` derived from what it announces, so a
republish after a crash (or a concurrent redelivery) is dropped by the stream's
duplicate window. NATS failures become ``DependencyDown``: the consumer loop retries
those with backoff instead of dead-lettering the event.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from memoryd import tracing
from memoryd.codec import decode, encode
from memoryd.errors import DependencyDown, MemorydError
from memoryd.schemas.events import Activity, ChatEvent, DeadLetter, EmbedJob, Turn
from memoryd.subjects import (
    CHAT_EVENTS,
    DLQ_STREAM,
    EXTRACT_JOBS,
    MSG_ID_HEADER,
    activity_key,
    activity_subject,
    chat_msg_id,
)
from services.ingest.logic.chat import ActivityThrottle, extract_jobs
from shared.bus.embed_jobs import publish_embed_jobs
from shared.observability.logging import get_logger

log = get_logger(__name__)

EmbedReason = Literal["new", "update", "reindex", "restore"]


@dataclass(frozen=True)
class Embed:
    """A memory that needs a vector."""

    memory_id: str
    owner: str
    content_hash: str
    reason: EmbedReason = "new"


class Publisher:
    """Publishes ingest's follow-up messages; one per service process."""

    def __init__(self, nc: Client, js: JetStreamContext, kv: KeyValue, throttle: ActivityThrottle) -> None:
        self._nc = nc
        self._js = js
        self._kv = kv
        self._throttle = throttle

    async def _publish(self, subject: str, data: bytes, msg_id: str) -> None:
        try:
            await self._js.publish(subject, data, headers=tracing.inject({MSG_ID_HEADER: msg_id}), timeout=5.0)
        except (nats.errors.Error, TimeoutError) as exc:
            raise DependencyDown(f"cannot publish to {subject}: {type(exc).__name__}: {exc}") from exc

    async def chat_event(self, event: ChatEvent, identity: bytes | None = None) -> bool:
        """Publish a chat event as every door does (``Nats-Msg-Id`` from the owner, the event id and
        a digest of ``identity``, else of the event); True when the stream had it already."""
        data = encode(event)
        msg_id = chat_msg_id(event.owner, event.event_id, data if identity is None else identity)
        try:
            ack = await self._js.publish(
                CHAT_EVENTS, data, headers=tracing.inject({MSG_ID_HEADER: msg_id}), timeout=5.0
            )
        except (nats.errors.Error, TimeoutError) as exc:
            raise DependencyDown(f"cannot publish to {CHAT_EVENTS}: {type(exc).__name__}: {exc}") from exc
        return bool(ack.duplicate)

    async def extract(self, event: ChatEvent, turns: Sequence[Turn]) -> int:
        """Publish the event's ExtractJob(s); return how many."""
        jobs = extract_jobs(event, turns)
        for msg_id, job in jobs:
            await self._publish(EXTRACT_JOBS, encode(job), msg_id)
        return len(jobs)

    async def embed(self, items: Sequence[Embed]) -> None:
        """Publish one EmbedJob per memory."""
        jobs = [
            EmbedJob(memory_id=i.memory_id, owner=i.owner, content_hash=i.content_hash, reason=i.reason) for i in items
        ]
        await publish_embed_jobs(self._js, jobs)

    async def embed_best_effort(self, items: Sequence[Embed]) -> None:
        """For API writes that are already committed: a failure is logged, never raised.

        The memory keeps ``needs_reindex`` set, so the embed service's lost-job sweep finds it.
        """
        try:
            await self.embed(items)
        except DependencyDown as exc:
            log.warning("ingest.embed_publish_failed", count=len(items), error=exc.description)

    async def activity(
        self, owner: str, kind: Literal["chat", "api"], session_id: str | None = None, *, force: bool = False
    ) -> None:
        """Record the owner's last activity (KV) and announce it (core NATS), throttled per owner."""
        now = time.monotonic()
        if not force and not self._throttle.due(owner, now):
            return
        at = datetime.now(UTC)
        try:
            await self._kv.put(activity_key(owner), at.isoformat().encode())
            await self._nc.publish(
                activity_subject(owner), encode(Activity(owner=owner, at=at, kind=kind, session_id=session_id))
            )
        except (nats.errors.Error, TimeoutError) as exc:
            raise DependencyDown(f"cannot record activity: {type(exc).__name__}: {exc}") from exc
        self._throttle.mark(owner, now)

    async def activity_best_effort(self, owner: str, session_id: str | None = None) -> None:
        try:
            await self.activity(owner, "api", session_id)
        except DependencyDown as exc:
            log.warning("ingest.activity_failed", error=exc.description)


#: A deletion scans at most this many dead letters for quotes of what it deleted.
MAX_DLQ_SCAN = 10_000


async def purge_dead_letters(js: JetStreamContext, quotes: list[str]) -> int:
    """Delete every dead letter whose payload or error quotes one of ``quotes`` (memory ids,
    text prefixes); how many. A letter is read decoded (its payload is base64 on the wire)."""
    needles = [q.encode() for q in quotes] + [msgspec.json.encode(q)[1:-1] for q in quotes]
    try:
        info = await js.stream_info(DLQ_STREAM)
    except nats.errors.Error:
        return 0
    first, last = info.state.first_seq, info.state.last_seq
    removed = 0
    for seq in range(max(first, last - MAX_DLQ_SCAN + 1), last + 1):
        try:
            msg = await js.get_msg(DLQ_STREAM, seq)
            letter = decode(msg.data or b"", DeadLetter)
        except (nats.errors.Error, MemorydError):
            continue
        text = letter.payload + letter.error.encode()
        if any(n and n in text for n in needles):
            await js.delete_msg(DLQ_STREAM, seq)
            removed += 1
    return removed
