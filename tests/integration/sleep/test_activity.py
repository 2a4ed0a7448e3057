"""Owner activity and a run: activity during an LLM call cancels it, reads count only with
`sleepCountReads`, a scheduled run re-checks idleness when it starts, retrieval announces reads."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.codec import decode, encode
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.events import Activity
from memoryd.schemas.ops import SleepRunRequest
from memoryd.schemas.retrieval import RetrieveRequest
from memoryd.subjects import activity_key, activity_subject, read_activity_key
from services.sleep import jobs
from shared.bus.provision import ensure_activity_bucket
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .conftest import SleepLlm, add_memory, put_settings, sleep_config, sleep_service


async def wait_record(nc: Client, pool: asyncpg.Pool, run_id: str, timeout: float = 60.0) -> asyncpg.Record:
    async def final() -> asyncpg.Record | None:
        row = await pool.fetchrow("SELECT * FROM dream_runs WHERE id = $1", uuid.UUID(run_id))
        return row if row is not None and row["status"] not in ("queued", "running") else None

    return await eventually(final, f"run {run_id} to finish", timeout=timeout)


async def announce(nc: Client, owner: str, kind: str) -> None:
    await nc.publish(activity_subject(owner), encode(Activity(owner=owner, at=datetime.now(UTC), kind=kind)))  # type: ignore[arg-type]
    await nc.flush()


async def test_activity_during_an_llm_call_cancels_it_and_aborts_the_run(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "o1", {"sleepPatternMinMemories": 1})
    await add_memory(pool, "o1", "likes tea")
    asked = asyncio.Event()

    async def slow(prompt: str) -> dict[str, Any]:
        asked.set()
        await asyncio.sleep(30)
        return {"patterns": []}

    llm.phases["patterns"] = slow
    async with sleep_service(nats_server, pg_dsn, llm):
        started = await call(nc, "sleep.run", SleepRunRequest(owner="o1"))
        await asyncio.wait_for(asked.wait(), 30)
        t0 = time.monotonic()
        await announce(nc, "o1", "chat")
        row = await wait_record(nc, pool, started.run_id)
        took = time.monotonic() - t0
    assert row["status"] == "aborted"
    assert took < 5  # the 30 s call was not waited for
    phase = row["phases"]["pattern_discovery"]
    assert phase["status"] == "aborted" and "during the sleep.patterns LLM call" in phase["reason"]
    assert row["counters"]["llmCallsCancelled"] == 1
    assert row["phases"]["relation_completion"]["reason"] == "not run"


async def test_reads_count_as_activity_only_with_sleep_count_reads(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "*", {"sleepPatternMinMemories": 1})
    for owner in ("plain", "reader"):
        await add_memory(pool, owner, "likes tea")
    await put_settings(pool, "reader", {"sleepCountReads": True})
    asked: asyncio.Queue[None] = asyncio.Queue()

    async def slow(prompt: str) -> dict[str, Any]:
        asked.put_nowait(None)
        await asyncio.sleep(3)
        return {"patterns": []}

    llm.phases["patterns"] = slow
    rows = {}
    async with sleep_service(nats_server, pg_dsn, llm):
        for owner in ("plain", "reader"):
            started = await call(nc, "sleep.run", SleepRunRequest(owner=owner))
            await asyncio.wait_for(asked.get(), 30)
            await announce(nc, owner, "read")
            rows[owner] = await wait_record(nc, pool, started.run_id)
    assert rows["plain"]["status"] == "noop"  # a read is not activity by default
    assert rows["reader"]["status"] == "aborted"


async def test_a_scheduled_run_rechecks_idle_when_it_starts(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    await put_settings(pool, "*", {"sleepModeEnabled": True})
    await put_settings(pool, "reader", {"sleepCountReads": True})
    kv = await ensure_activity_bucket(nc.jetstream())
    now = datetime.now(UTC)
    await kv.put(activity_key("busy"), (now - timedelta(minutes=1)).isoformat().encode())  # active since queued
    await kv.put(read_activity_key("reader"), (now - timedelta(minutes=1)).isoformat().encode())
    await kv.put(read_activity_key("idle"), (now - timedelta(minutes=1)).isoformat().encode())  # reads don't count
    await kv.put(activity_key("idle"), (now - timedelta(minutes=30)).isoformat().encode())
    async with run_services(["sleep"], sleep_config(nats_server, pg_dsn, None)) as ctxs:
        queued = []
        for owner in ("busy", "reader", "idle"):
            job, msg_id = jobs.scheduled_job(owner, "first", now)
            await jobs.enqueue(ctxs["sleep"].db, nc.jetstream(), job, msg_id)
            queued.append(job.run_id)
        row = await wait_record(nc, pool, queued[2])

        async def dropped() -> bool:
            return await pool.fetchval("SELECT count(*) FROM dream_runs WHERE id::text = ANY($1)", queued[:2]) == 0

        await eventually(dropped, "the busy owners' runs dropped", timeout=10)
    assert row["status"] == "noop" and row["owner"] == "idle"


async def test_a_retrieval_announces_a_read_of_its_owner(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    await add_memory(pool, "o1", "likes green tea")
    kv = await ensure_activity_bucket(nc.jetstream())
    seen: list[Activity] = []

    async def on_msg(msg: Any) -> None:
        seen.append(decode(msg.data, Activity))

    sub = await nc.subscribe(activity_subject("o1"), cb=on_msg)
    async with run_services(["retrieve"], sleep_config(nats_server, pg_dsn, None)):
        await call(nc, "retrieve", RetrieveRequest(owner="o1", query="tea", strategy="exact", dry_run=True))
        await asyncio.sleep(0.3)
        assert seen == []  # a preview is not a read
        await call(nc, "retrieve", RetrieveRequest(owner="o1", query="tea", strategy="exact"))
        await eventually(lambda: asyncio.sleep(0, bool(seen)), "the read announced", timeout=10)
    await sub.unsubscribe()
    assert [a.kind for a in seen] == ["read"]
    entry = await kv.get(read_activity_key("o1"))
    assert datetime.fromisoformat(entry.value.decode()) <= datetime.now(UTC)
