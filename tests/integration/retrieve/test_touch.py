"""Recall heat writes: a memory's access time moves only by the configured granularity."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg

from services.retrieve.adapters.postgres_touch import Toucher

from .conftest import put


async def _accessed(pool: asyncpg.Pool, memory_id: str) -> datetime | None:
    value: datetime | None = await pool.fetchval(
        "SELECT last_accessed_at FROM memories WHERE id = $1", uuid.UUID(memory_id)
    )
    return value


async def test_touch_writes_first_access_then_only_past_the_granularity(pool: asyncpg.Pool) -> None:
    memory_id = await put(pool, f"touch-{uuid.uuid4().hex[:8]}", "remembered often")
    toucher = Toucher(pool, granularity_s=600)
    t0 = datetime.now(UTC).replace(microsecond=0)
    toucher.touch([memory_id], t0)
    assert await toucher.flush() == 1
    assert await _accessed(pool, memory_id) == t0  # a first access is always written
    toucher.touch([memory_id], t0 + timedelta(minutes=9))
    await toucher.flush()
    assert await _accessed(pool, memory_id) == t0  # within the granularity: no new row version
    toucher.touch([memory_id], t0 + timedelta(minutes=10))
    await toucher.flush()
    assert await _accessed(pool, memory_id) == t0 + timedelta(minutes=10)
    toucher.touch([memory_id], t0 - timedelta(days=1))  # a late flush never moves it back
    await toucher.flush()
    assert await _accessed(pool, memory_id) == t0 + timedelta(minutes=10)
