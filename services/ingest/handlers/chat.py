"""The chat-event consumer: one Postgres transaction per event, then the follow-up messages.

In one transaction (settings from the shared ``SettingsCache``, read first): record
``(owner, event_id)`` in ``events`` (a concurrent delivery waits on the row, then sees it
processed); with ``no_memory`` or the owner's ``enabled=false`` only that record; else insert the
event's distinct turns into ``turn_hashes`` (the rows that come back are new: a resent history
is stored once) and, unless ``storeTurns`` is off or the quota is full, store each new turn as an
``episodic`` memory (``source=chat_turn``). An owner over ``eventsPerSecond`` gets ``RateLimited``
(a ``nak``). After the commit: extract jobs, embed jobs, the owner's activity, then
``events.published_at``; the ack comes last. A redelivered event whose row is unpublished
rebuilds its new turns from ``turn_hashes.event_id`` and publishes again (``Nats-Msg-Id`` dedupe).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

import structlog

from memoryd.errors import QuotaExceeded, RateLimited
from memoryd.schemas.events import ChatEvent, Turn
from services.ingest.adapters import postgres_events as events
from services.ingest.adapters.nats import Embed, Publisher
from services.ingest.logic.chat import (
    PlannedTurn,
    check_event,
    check_subject_owner,
    header_no_memory,
    plan_turns,
    session_key,
    turn_metadata,
)
from shared.bus.consumer import JobContext
from shared.db import memories
from shared.db.pool import Connection, Pool
from shared.observability.logging import get_logger
from shared.observability.metrics import EVENTS, TURNS
from shared.ratelimit import RateLimiter
from shared.settings.cache import SettingsCache
from shared.settings.memory import MemorySettings

log = get_logger(__name__)


@dataclass
class Outcome:
    """What the transaction decided; drives the publishing after the commit."""

    kind: str  # stored | republish | duplicate | no_memory | disabled
    turns: list[Turn] = field(default_factory=list)  # new turns, for extraction
    embeds: list[Embed] = field(default_factory=list)  # stored turns, for vectors
    duplicates: int = 0


class ChatIngestor:
    """Handles one decoded ``ChatEvent`` at a time (the consumer runs several concurrently)."""

    def __init__(self, pool: Pool, publisher: Publisher, settings: SettingsCache) -> None:
        self._pool = pool
        self._publisher = publisher
        self._settings = settings
        self._limiter = RateLimiter()  # eventsPerSecond per owner

    async def handle(self, event: ChatEvent, job: JobContext) -> None:
        with structlog.contextvars.bound_contextvars(owner=event.owner, event_id=event.event_id):
            check_event(event)
            check_subject_owner(job.subject, event.owner)
            no_memory = event.no_memory or header_no_memory(job.msg.headers)
            planned = plan_turns(event)
            owner_settings = await self._settings.get(event.owner)  # before taking a connection
            wait = self._limiter.take(event.owner, owner_settings.events_per_second, time.monotonic())
            if wait:
                raise RateLimited(f"owner {event.owner!r} is over {owner_settings.events_per_second} events/s", wait)
            settings = None if no_memory else owner_settings
            async with self._pool.acquire() as conn:  # one connection: a pool release costs a round trip
                async with conn.transaction():
                    outcome = await self._store(conn, event, planned, settings)
                EVENTS.labels(outcome.kind).inc()
                if outcome.kind in ("stored", "republish"):
                    await self._publish(conn, event, outcome)
            log.debug("ingest.event", outcome=outcome.kind, new_turns=len(outcome.turns), dup=outcome.duplicates)

    async def _store(
        self, conn: Connection, event: ChatEvent, planned: list[PlannedTurn], settings: MemorySettings | None
    ) -> Outcome:
        """``settings`` None: the event opted out (``no_memory``)."""
        owner, skey = event.owner, session_key(event.session_id, event.agent_id)
        kind = "no_memory" if settings is None else "stored" if settings.enabled else "disabled"
        if not await events.record_event(
            conn, event.event_id, owner, event.session_id, kind, opted_out=settings is None
        ):
            return await self._unpublished(conn, event, planned)
        if kind != "stored" or settings is None:
            return Outcome(kind=kind)

        # new turns come back; their memory ids are chosen up front (the FK is checked at commit)
        store = settings.store_turns and await self._within_quota(conn, owner, planned, settings)
        ids = [uuid.uuid4() if store else None for _ in planned]
        fresh = await events.insert_turn_hashes(
            conn, owner, skey, event.event_id, [(t.role, t.hash, mid) for t, mid in zip(planned, ids, strict=True)]
        )
        new = [(t, mid) for t, mid in zip(planned, ids, strict=True) if (t.role, t.hash) in fresh]
        texted = sum(1 for m in event.messages if m.text.strip())  # a message without text is no turn
        out = Outcome(kind="stored", duplicates=texted - len(new))
        TURNS.labels("duplicate").inc(out.duplicates)
        for t, mid in new:
            if mid is None:  # the owner's storeTurns is off: extraction only
                out.turns.append(Turn(role=t.role, content=t.extract_text, speaker=t.speaker))
                continue
            meta = turn_metadata(event, t)
            rec = await memories.insert(
                conn,
                owner=owner,
                memory_type="episodic",
                content=t.content,
                source="chat_turn",
                session_id=event.session_id,
                agent_id=event.agent_id,
                metadata=meta,
                created_at=t.created_at,
                memory_id=mid,
            )
            out.turns.append(Turn(role=t.role, content=t.extract_text, memory_id=rec.id, speaker=t.speaker))
            out.embeds.append(Embed(memory_id=rec.id, owner=owner, content_hash=rec.content_hash))
        TURNS.labels("stored").inc(len(out.embeds))
        TURNS.labels("not_stored").inc(len(new) - len(out.embeds))
        return out

    async def _within_quota(
        self, conn: Connection, owner: str, planned: list[PlannedTurn], settings: MemorySettings
    ) -> bool:
        """Whether the event's turns fit the owner's quota; when not, they are extracted but not stored."""
        try:
            await memories.check_quota(
                conn,
                owner,
                max_memories=settings.max_memories,
                max_bytes=settings.max_memory_bytes,
                adding=len(planned),
                adding_bytes=sum(len(t.content.encode("utf-8", "surrogatepass")) for t in planned),
            )
        except QuotaExceeded as exc:
            log.warning("ingest.quota_full", error=exc.description)
            TURNS.labels("over_quota").inc(len(planned))
            return False
        return True

    async def _unpublished(self, conn: Connection, event: ChatEvent, planned: list[PlannedTurn]) -> Outcome:
        """A processed event: nothing to do, unless its follow-ups were never published."""
        if await events.event_published(conn, event.owner, event.event_id):
            return Outcome(kind="duplicate")
        by_turn = await events.event_turns(
            conn, event.owner, session_key(event.session_id, event.agent_id), event.event_id
        )
        out = Outcome(kind="republish")
        for t in planned:
            found = by_turn.get((t.role, t.hash))
            if found is None:
                continue
            stored, digest = found
            mid = stored if stored and digest else None
            out.turns.append(Turn(role=t.role, content=t.extract_text, memory_id=mid, speaker=t.speaker))
            if mid and digest:
                out.embeds.append(Embed(memory_id=mid, owner=event.owner, content_hash=digest))
        log.info("ingest.republish", turns=len(out.turns))
        return out

    async def _publish(self, conn: Connection, event: ChatEvent, outcome: Outcome) -> None:
        await asyncio.gather(
            self._publisher.extract(event, outcome.turns),
            self._publisher.embed(outcome.embeds),
            self._publisher.activity(event.owner, "chat", event.session_id, force=outcome.kind == "republish"),
        )
        await events.mark_published(conn, event.owner, event.event_id, len(outcome.embeds))
