"""The scheduler on real NATS + Postgres: off by default, idle owners only, one booking per due run,
backoff from the run history, stale jobs dropped, and a run scheduled end to end."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client
from prometheus_client import REGISTRY

from memoryd.local.nats import EmbeddedNats
from memoryd.subjects import SLEEP_STREAM, activity_key
from services.sleep import jobs
from services.sleep.adapters.activity_kv import ActivityReader
from services.sleep.config import SleepServiceConfig
from services.sleep.context import Deps
from services.sleep.scheduler import Scheduler
from shared.bus.provision import ensure_activity_bucket, ensure_streams
from shared.settings.env import NatsConfig
from shared.vectors.pgvector import PgVectorStore

from .conftest import add_memory, put_settings, run_sleep, sleep_service

NOW = datetime.now(UTC)


async def scheduler(pool: asyncpg.Pool, nc: Client) -> tuple[Scheduler, Deps]:
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    kv = await ensure_activity_bucket(js)
    deps = Deps(
        pool=pool,
        js=js,
        nc=nc,
        cfg=SleepServiceConfig(),
        llm=None,
        pairs=PgVectorStore(pool),
        activity=ActivityReader(kv),
    )
    return Scheduler(deps), deps


async def active(nc: Client, owner: str, at: datetime) -> None:
    kv = await ensure_activity_bucket(nc.jetstream())
    await kv.put(activity_key(owner), at.isoformat().encode())


async def queued_messages(nc: Client) -> int:
    return int((await nc.jetstream().stream_info(SLEEP_STREAM)).state.messages)


async def add_run(pool: asyncpg.Pool, owner: str, status: str, started: datetime, reason: str = "scheduled") -> None:
    await pool.execute(
        "INSERT INTO dream_runs (id, owner, status, started_at, finished_at, reason) VALUES ($1, $2, $3, $4, $4, $5)",
        uuid.uuid4(),
        owner,
        status,
        started,
        reason,
    )


async def test_nothing_is_scheduled_by_default(pool: asyncpg.Pool, nc: Client) -> None:
    sched, _deps = await scheduler(pool, nc)
    await add_memory(pool, "o1", "a memory")
    await active(nc, "o1", NOW - timedelta(hours=5))
    assert await sched.tick(NOW) == []
    assert await queued_messages(nc) == 0


async def test_idle_enabled_owners_are_booked_once_by_concurrent_schedulers(pool: asyncpg.Pool, nc: Client) -> None:
    first, _ = await scheduler(pool, nc)
    second, _ = await scheduler(pool, nc)
    await put_settings(pool, "*", {"sleepModeEnabled": True})
    await put_settings(pool, "busy", {"sleepIdleMinutes": 10})
    await put_settings(pool, "off@team", {"sleepModeEnabled": False})
    for owner in ("idle:1", "busy", "off@team"):
        await add_memory(pool, owner, "x")
        await active(nc, owner, NOW - timedelta(minutes=7))
    await add_memory(pool, "quiet", "never active")  # no activity at all counts as idle
    booked = await asyncio.gather(first.tick(NOW), second.tick(NOW), first.tick(NOW))
    assert all(sorted(b) == ["idle:1", "quiet"] for b in booked)
    assert await queued_messages(nc) == 2  # the stream dropped the repeated msg ids
    rows = await pool.fetch("SELECT owner, status, reason FROM dream_runs ORDER BY owner")
    assert [(r["owner"], r["status"], r["reason"]) for r in rows] == [
        ("idle:1", "queued", "scheduled"),
        ("quiet", "queued", "scheduled"),
    ]


async def test_interval_and_failure_backoff_come_from_the_run_history(pool: asyncpg.Pool, nc: Client) -> None:
    sched, _ = await scheduler(pool, nc)
    await put_settings(pool, "*", {"sleepModeEnabled": True, "sleepFailureBackoff": True})
    await add_run(pool, "recent", "ok", NOW - timedelta(hours=7))
    await add_run(pool, "old", "ok", NOW - timedelta(hours=9))
    for hours in (60, 40):
        await add_run(pool, "failing", "failed", NOW - timedelta(hours=hours))
    await add_run(pool, "failing", "failed", NOW - timedelta(hours=30), "interrupted")  # a killed worker's
    await add_run(pool, "failing", "failed", NOW - timedelta(hours=20))  # 3 failures: 8 h * 8, capped at 24 h
    await add_run(pool, "healed", "failed", NOW - timedelta(hours=40))
    await add_run(pool, "healed", "noop", NOW - timedelta(hours=30))  # a noop ends the streak
    await add_run(pool, "healed", "failed", NOW - timedelta(hours=20))  # 1 failure: 16 h
    await add_run(pool, "cut", "ok", NOW - timedelta(hours=9))
    await add_run(pool, "cut", "aborted", NOW - timedelta(minutes=30))  # does not hold the next one off
    for owner in ("recent", "old", "failing", "healed", "cut"):
        await add_memory(pool, owner, "x")
    assert sorted(await sched.tick(NOW)) == ["cut", "healed", "old"]
    # the interrupted run neither counts nor ends the streak: "failing" has failed 3 times running
    assert REGISTRY.get_sample_value("memoryd_sleep_failure_streak_runs") == 3
    assert sorted(await sched.tick(NOW + timedelta(hours=4, minutes=1))) == [
        "cut",
        "failing",
        "healed",
        "old",
        "recent",
    ]


async def test_a_job_whose_slot_is_no_longer_current_is_dropped(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    await put_settings(pool, "*", {"sleepModeEnabled": True})
    async with sleep_service(nats_server, pg_dsn):
        manual = await run_sleep(nc, "o1")  # a run is recorded: the slot "first" is stale now
        _sched, deps = await scheduler(pool, nc)
        stale, msg_id = jobs.scheduled_job("o1", "first", NOW)
        await jobs.enqueue(pool, deps.js, stale, msg_id)
        for _ in range(200):  # the row goes first, then the job is acked
            gone = await pool.fetchval("SELECT count(*) FROM dream_runs WHERE id = $1", uuid.UUID(stale.run_id)) == 0
            info = await nc.jetstream().stream_info(SLEEP_STREAM)
            if gone and info.state.messages == 0:
                break
            await asyncio.sleep(0.05)
    assert await pool.fetchval("SELECT count(*) FROM dream_runs WHERE id = $1", uuid.UUID(stale.run_id)) == 0
    assert info.state.messages == 0  # consumed (acked), not retried
    assert [r["id"] for r in await pool.fetch("SELECT id FROM dream_runs")] == [uuid.UUID(manual.run_id)]


async def test_the_service_schedules_and_runs_an_idle_owner(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_SLEEP_SCHEDULER", "true")
    monkeypatch.setenv("MEMORYD_SLEEP_TICK_S", "0.2")
    await put_settings(pool, "sleepy", {"sleepModeEnabled": True})
    await add_memory(pool, "sleepy", "cold", created_days_ago=40)
    await add_memory(pool, "awake", "cold", created_days_ago=40)  # sleep mode off (the default)
    async with sleep_service(nats_server, pg_dsn):
        for _ in range(300):
            row = await pool.fetchrow("SELECT * FROM dream_runs WHERE owner = 'sleepy'")
            if row is not None and row["status"] not in ("queued", "running"):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # more ticks: the next run is not due for 8 hours
    rows = await pool.fetch("SELECT owner, status, reason, phases FROM dream_runs")
    assert [(r["owner"], r["status"], r["reason"]) for r in rows] == [("sleepy", "ok", "scheduled")]
    assert rows[0]["phases"]["archival_demotion"]["summarized"] == 1
