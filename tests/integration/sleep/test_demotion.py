"""Phase 2: batches over cold memories, summary -> archived, and the in-transaction re-check."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from services.sleep.adapters import demotion_store
from services.sleep.adapters.activity_kv import LiveActivity
from services.sleep.config import SleepServiceConfig
from services.sleep.context import Deps, RunContext
from services.sleep.logic.demotion import demotion_plan
from services.sleep.logic.settings import SleepSettings
from services.sleep.phases.demotion import apply_plan
from shared.vectors.pgvector import PgVectorStore

from .conftest import add_memory, memory_row, run_sleep, sleep_service, states


async def test_cold_memories_are_demoted_in_batches_and_summaries_archive_later(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_SLEEP_DEMOTION_BATCH", "2")
    cold = [await add_memory(pool, "o1", f"cold note {i}", created_days_ago=40 + i) for i in range(5)]
    summary = await add_memory(pool, "o1", "an old summary", created_days_ago=100)
    await pool.execute(
        "UPDATE memories SET state = 'summary', full_content = 'the long original' WHERE id = $1", uuid.UUID(summary)
    )
    recent_access = await add_memory(pool, "o1", "old but read yesterday", created_days_ago=300, accessed_days_ago=1)
    async with sleep_service(nats_server, pg_dsn):
        run = await run_sleep(nc, "o1")
    demotion = run.phases["archival_demotion"]
    assert (demotion["scanned"], demotion["summarized"], demotion["archived"]) == (6, 5, 1)
    assert await states(pool, *cold) == ["summary"] * 5
    row = await memory_row(pool, summary)
    assert (row["state"], row["full_content"]) == ("archived", "the long original")
    assert await states(pool, recent_access) == ["active"]


async def test_a_memory_recalled_during_the_run_is_not_demoted(pool: asyncpg.Pool) -> None:
    memory_id = await add_memory(pool, "o1", "read during the run", created_days_ago=60, accessed_days_ago=50)
    archived_id = await add_memory(pool, "o1", "also read during the run", created_days_ago=200)
    still_cold = await add_memory(pool, "o1", "nobody reads this", created_days_ago=60, accessed_days_ago=50)
    snapshot = datetime.now(UTC)
    candidates, _after = await demotion_store.cold_batch(pool, "o1", snapshot, demotion_store.START, 100)
    assert len(candidates) == 3
    plan = demotion_plan(candidates, snapshot, 30, 90)
    assert (len(plan.to_summary), len(plan.to_archive)) == (2, 1)
    await asyncio.sleep(0.01)
    await pool.execute(  # retrieval touches them after the snapshot
        "UPDATE memories SET last_accessed_at = now() WHERE id = ANY($1::uuid[])",
        [uuid.UUID(memory_id), uuid.UUID(archived_id)],
    )
    deps = Deps(pool=pool, js=None, nc=None, cfg=SleepServiceConfig(), llm=None, pairs=PgVectorStore(pool))  # type: ignore[arg-type]

    async def keepalive() -> None:
        return None

    rc = RunContext(
        deps=deps,
        run_id=str(uuid.uuid4()),
        owner="o1",
        snapshot_at=snapshot,
        settings=SleepSettings(),
        live=LiveActivity(),
        keepalive=keepalive,
    )
    summarized, archived, recalled = await apply_plan(rc, plan)
    assert (summarized, archived, recalled) == ([still_cold], [], 2)
    assert await states(pool, memory_id, archived_id, still_cold) == ["active", "active", "summary"]
    assert snapshot - timedelta(days=1) < (await memory_row(pool, memory_id))["last_accessed_at"]
