"""Fixtures and helpers for the ingest tests: the service in-process on this test's NATS and
this module's database, a tap on the jobs it publishes, and small polling helpers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeout

from memoryd.client import MemoryClient
from memoryd.codec import decode, encode
from memoryd.local.nats import EmbeddedNats
from memoryd.schemas import ChatEvent, ChatMessage, DeadLetter, EmbedJob, ExtractJob
from memoryd.subjects import CHAT_EVENTS, DLQ_STREAM, EMBED_JOBS, EXTRACT_JOBS, JOBS_STREAM, dlq_subject
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services, service_config


@pytest.fixture
def config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    """Two deliveries before the DLQ keep poison tests short."""
    return service_config(nats_server.url, pg_dsn, {"MEMORYD_NATS_MAX_DELIVER": "2"})


@pytest.fixture
async def ingest(config: ServiceConfig) -> AsyncIterator[ServiceContext]:
    async with run_services(["ingest"], config) as ctxs:
        yield ctxs["ingest"]


@pytest.fixture
async def client(nc: Client, ingest: ServiceContext) -> MemoryClient:
    return MemoryClient(nc)


@pytest.fixture
def owner() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


def chat(owner: str, *turns: tuple[str, str], event_id: str | None = None, **kw: Any) -> ChatEvent:
    return ChatEvent(
        event_id=event_id or uuid.uuid4().hex,
        owner=owner,
        messages=[ChatMessage(role=role, content=text) for role, text in turns],  # type: ignore[arg-type]
        occurred_at=kw.pop("occurred_at", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        **kw,
    )


async def publish(nc: Client, data: ChatEvent | bytes, msg_id: str | None = None, **headers: str) -> None:
    hdrs = dict(headers)
    if msg_id is not None:
        hdrs["Nats-Msg-Id"] = msg_id
    payload = data if isinstance(data, bytes) else encode(data)
    await nc.jetstream().publish(CHAT_EVENTS, payload, headers=hdrs or None)


async def event_row(pool: asyncpg.Pool, owner: str, event_id: str) -> asyncpg.Record | None:
    return await pool.fetchrow("SELECT * FROM events WHERE owner = $1 AND event_id = $2", owner, event_id)


async def wait_event(pool: asyncpg.Pool, owner: str, event_id: str, published: bool = True) -> asyncpg.Record:
    async def done() -> asyncpg.Record | None:
        row = await event_row(pool, owner, event_id)
        return row if row is not None and (not published or row["published_at"] is not None) else None

    row: asyncpg.Record = await eventually(done, what=f"event {event_id} processed")
    return row


async def turns(pool: asyncpg.Pool, owner: str) -> list[asyncpg.Record]:
    return await pool.fetch(
        "SELECT id, content, metadata, session_id, type, source, created_at FROM memories"
        " WHERE owner = $1 AND source = 'chat_turn' ORDER BY created_at",
        owner,
    )


async def snapshot(pool: asyncpg.Pool) -> tuple[int, ...]:
    """Row counts of everything a write could touch (to prove nothing was written)."""
    row = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM events), (SELECT count(*) FROM turn_hashes),"
        " (SELECT count(*) FROM content_history), (SELECT coalesce(max(updated_at)::text, '') FROM memories)"
    )
    assert row is not None
    return tuple(row)


class JobTap:
    """Reads (and acks) what ingest published to the work queues; accumulates it."""

    def __init__(self, nc: Client) -> None:
        self._js = nc.jetstream()
        self.extract: list[ExtractJob] = []
        self.embed: list[EmbedJob] = []
        self._subs: dict[str, Any] = {}

    async def poll(self) -> JobTap:
        """Take everything the stream holds for the tap right now (until its consumer has nothing pending)."""
        for subject in (EXTRACT_JOBS, EMBED_JOBS):
            if subject not in self._subs:
                durable = f"tap-{subject.rsplit('.', 1)[-1]}-{uuid.uuid4().hex[:6]}"
                self._subs[subject] = await self._js.pull_subscribe(subject, durable=durable, stream=JOBS_STREAM)
            sub = self._subs[subject]
            while True:
                info = await sub.consumer_info()
                if info.num_pending == 0 and info.num_ack_pending == 0:
                    break
                try:
                    msgs = await sub.fetch(1000, timeout=2.0)
                except NatsTimeout:
                    msgs = []
                for m in msgs:
                    if subject == EXTRACT_JOBS:
                        self.extract.append(decode(m.data, ExtractJob))
                    else:
                        self.embed.append(decode(m.data, EmbedJob))
                    await m.ack_sync()
        return self


async def dead_letters(nc: Client, stage: str = "ingest") -> list[DeadLetter]:
    js = nc.jetstream()
    try:
        info = await js.stream_info(DLQ_STREAM)
    except Exception:
        return []
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(DLQ_STREAM, seq)
        except Exception:
            continue
        if msg.subject == dlq_subject(stage):
            assert msg.data is not None
            out.append(decode(msg.data, DeadLetter))
    return out
