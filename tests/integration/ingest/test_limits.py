"""Per-owner limits as runtime settings: quotas (memories, bytes) on API writes and chat
turns, events per second (the event waits in the stream), searches per second (429 with a
retry-after on retrieve), and bookkeeping rows pruned by ``bookkeepingRetentionDays``."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.codec import encode
from memoryd.errors import QuotaExceeded, RateLimited
from memoryd.rpc import call
from memoryd.schemas.ops import CleanupRequest
from memoryd.schemas.retrieval import RetrieveRequest
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from shared.settings.memory import GLOBAL_OWNER
from tests.support.stack import run_services

from .conftest import chat, publish, turns, wait_event


async def _set(pool: asyncpg.Pool, owner: str, values: dict[str, object]) -> None:
    await pool.execute(
        'INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)'
        ' ON CONFLICT (owner) DO UPDATE SET "values" = settings."values" || EXCLUDED."values"',
        owner,
        values,
    )


async def test_quota_refuses_api_writes_and_stops_storing_turns(
    nc: Client, client: MemoryClient, pool: asyncpg.Pool, owner: str
) -> None:
    await _set(pool, owner, {"maxMemories": 2})
    await client.create(owner, "one")
    await client.create(owner, "two")
    with pytest.raises(QuotaExceeded, match="quota is 2"):
        await client.create(owner, "three")
    result = await client.import_lines(owner, "")
    assert result.imported == 0
    event = chat(owner, ("user", "I prefer being over quota."))
    await publish(nc, event, event.event_id)
    row = await wait_event(pool, owner, event.event_id)
    assert row["turns_stored"] == 0 and await turns(pool, owner) == []
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", owner) == 2

    other = f"{owner}-b"
    await _set(pool, other, {"maxMemoryBytes": 10})
    await client.create(other, "0123456789")
    with pytest.raises(QuotaExceeded, match="bytes"):
        await client.create(other, "x")


async def test_an_owner_over_its_event_rate_waits_and_nothing_is_lost(
    nc: Client, pool: asyncpg.Pool, owner: str, ingest: ServiceContext
) -> None:
    await _set(pool, owner, {"eventsPerSecond": 2})
    events = [chat(owner, ("user", f"I prefer number {i}.")) for i in range(6)]
    started = time.monotonic()
    for event in events:
        await publish(nc, event, event.event_id)
    for event in events:
        await wait_event(pool, owner, event.event_id)
    # a burst of 2, then 2/s: the last of 6 events cannot be handled before ~2 s
    assert time.monotonic() - started >= 1.5
    assert len(await turns(pool, owner)) == 6


async def test_searches_over_the_rate_get_429_with_a_retry_after(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, owner: str
) -> None:
    await _set(pool, owner, {"searchesPerSecond": 1})
    async with run_services(["retrieve"], config):
        await call(nc, "retrieve", RetrieveRequest(owner=owner, query="tea"))
        with pytest.raises(RateLimited) as info:
            await call(nc, "retrieve", RetrieveRequest(owner=owner, query="tea"))
        assert info.value.code == 429 and 0 < info.value.retry_after_s <= 1.0
        msg = await nc.request("mem.v1.rpc.retrieve", encode(RetrieveRequest(owner=owner, query="tea")), timeout=5)
        assert msg.headers is not None and msg.headers["Retry-After"] == "1"
        await call(nc, "retrieve", RetrieveRequest(owner=f"{owner}-other", query="tea"))  # owners are apart


async def test_cleanup_prunes_bookkeeping_past_the_retention(
    nc: Client, pool: asyncpg.Pool, owner: str, ingest: ServiceContext
) -> None:
    await _set(pool, GLOBAL_OWNER, {"bookkeepingRetentionDays": 30})
    old = datetime.now(UTC) - timedelta(days=31)
    recent = datetime.now(UTC) - timedelta(days=1)
    for when, eid in ((old, "old"), (recent, "new")):
        await pool.execute(
            "INSERT INTO events (event_id, owner, processed_at, published_at) VALUES ($1, $2, $3, $3)", eid, owner, when
        )
        await pool.execute(
            "INSERT INTO extract_runs (owner, event_id, llm_status, processed_at) VALUES ($1, $2, 'ok', $3)",
            owner,
            eid,
            when,
        )
        await pool.execute(
            "INSERT INTO turn_hashes (owner, session_key, role, hash, created_at) VALUES ($1, '', 'user', $2, $3)",
            owner,
            eid,
            when,
        )
        await pool.execute(
            "INSERT INTO llm_audit_logs (owner, operation, status, created_at) VALUES ($1, 't', 'ok', $2)", owner, when
        )
        await pool.execute(
            "INSERT INTO dream_runs (id, owner, run_type, status, created_at) VALUES ($1, $2, 'sleep', 'ok', $3)",
            uuid.uuid4(),
            owner,
            when,
        )
    await pool.execute(  # unpublished: a redelivery still needs it
        "INSERT INTO events (event_id, owner, processed_at) VALUES ('stuck', $1, $2)", owner, old
    )
    dry = await call(nc, "cleanup", CleanupRequest(dry_run=True))
    assert all(dry.bookkeeping[t] >= 1 for t in ("events", "turn_hashes", "extract_runs", "llm_audit_logs"))
    done = await call(nc, "cleanup", CleanupRequest())
    assert done.bookkeeping["events"] >= 1 and done.bookkeeping["dream_runs"] >= 1
    for table, column in (
        ("events", "event_id"),
        ("extract_runs", "event_id"),
        ("turn_hashes", "hash"),
    ):
        kept = await pool.fetch(f"SELECT {column} FROM {table} WHERE owner = $1 ORDER BY 1", owner)
        assert sorted(r[0] for r in kept) == (["new", "stuck"] if table == "events" else ["new"]), table
    assert await pool.fetchval("SELECT count(*) FROM llm_audit_logs WHERE owner = $1", owner) == 1
    assert await pool.fetchval("SELECT count(*) FROM dream_runs WHERE owner = $1", owner) == 1
