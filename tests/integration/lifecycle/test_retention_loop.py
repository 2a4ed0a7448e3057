"""The hourly retention cleanup loop itself, with an injected clock: memories older than their
owner's ``retentionDays`` leave every store (row, pgvector vector, Qdrant point), younger ones
stay, each owner's setting is honoured on its own (365 days by default), global memories stay,
and moving the clock forward makes the next round remove what has aged past retention."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest

from services.ingest.adapters.stores import MemoryStores
from services.ingest.handlers.lifecycle import LifecycleApi
from shared.db import memories
from shared.settings.cache import SettingsCache
from shared.vectors.port import VectorItem
from shared.vectors.registry import VectorStores, open_stores
from tests.support.stack import service_config

SIG = "local:test:4"
ROUND_S = 0.05


@pytest.fixture
async def stores(pg_dsn: str, pool: asyncpg.Pool) -> AsyncIterator[VectorStores]:
    extra = {"MEMORYD_QDRANT_URL": ":memory:", "MEMORYD_QDRANT_COLLECTION": f"r{uuid.uuid4().hex[:8]}"}
    vs = await open_stores(service_config("nats://127.0.0.1:1", pg_dsn, extra), pool)
    yield vs
    await vs.close()


async def memory(pool: asyncpg.Pool, owner: str, days_old: float, now: datetime, scope: str = "apiKey") -> str:
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type="factual",
        content=f"{owner} note {days_old} days old",
        source="api",
        scope=scope,
        created_at=now - timedelta(days=days_old),
    )
    return record.id


async def embed(stores: VectorStores, owner: str, ids: list[str]) -> None:
    rng = np.random.default_rng(11)
    vectors = [rng.normal(size=4).astype(np.float32) for _ in ids]
    items = [
        VectorItem(memory_id=i, owner=owner, vector=v / np.linalg.norm(v)) for i, v in zip(ids, vectors, strict=True)
    ]
    for store in stores.all:
        await store.ensure(SIG, 4)
    assert set((await stores.upsert(SIG, items)).values()) == {len(ids)}


async def where(pool: asyncpg.Pool, stores: VectorStores, ids: list[str]) -> dict[str, set[str]]:
    """Which of ``ids`` each store still holds."""
    wanted = [uuid.UUID(i) for i in ids]
    rows = await pool.fetch("SELECT id FROM memories WHERE id = ANY($1::uuid[])", wanted)
    vectors = await pool.fetch("SELECT memory_id FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])", wanted)
    assert stores.qdrant is not None
    points = {point for page in [p async for p in stores.qdrant.point_refs()] for point, _owner in page}
    return {
        "rows": {str(r["id"]) for r in rows},
        "pgvector": {str(r["memory_id"]) for r in vectors},
        "qdrant": points & set(ids),
    }


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "the cleanup loop did not get there in time"
        await asyncio.sleep(ROUND_S)


async def test_the_loop_removes_what_is_past_each_owners_retention(pool: asyncpg.Pool, stores: VectorStores) -> None:
    real_now = datetime.now(UTC)
    clock = [real_now]
    short, default = f"short-{uuid.uuid4().hex[:6]}", f"default-{uuid.uuid4().hex[:6]}"
    await pool.execute('INSERT INTO settings (owner, "values") VALUES ($1, \'{"retentionDays": 30}\'::jsonb)', short)
    s_old, s_young = await memory(pool, short, 40, real_now), await memory(pool, short, 10, real_now)
    s_global = await memory(pool, short, 400, real_now, scope="global")
    d_ancient, d_old = await memory(pool, default, 400, real_now), await memory(pool, default, 40, real_now)
    await embed(stores, short, [s_old, s_young])
    await embed(stores, default, [d_ancient, d_old])
    ids = [s_old, s_young, s_global, d_ancient, d_old]
    assert await where(pool, stores, ids) == {
        "rows": set(ids),
        "pgvector": {s_old, s_young, d_ancient, d_old},
        "qdrant": {s_old, s_young, d_ancient, d_old},
    }

    api = LifecycleApi(
        MemoryStores(pool, stores.external, stores.pgvector),
        stores.pgvector,
        None,  # type: ignore[arg-type]  # cleanup publishes nothing
        SettingsCache(pool, ttl_s=0).get,
        None,
        clock=lambda: clock[0],
    )
    stop = asyncio.Event()
    loop = asyncio.create_task(api.cleanup_periodically(ROUND_S, stop))
    try:
        first = {s_young, s_global, d_old}

        async def first_round_done() -> bool:
            return (await where(pool, stores, ids))["rows"] == first

        await until(first_round_done)
        await asyncio.sleep(ROUND_S * 4)  # more rounds at the same time remove nothing more
        assert await where(pool, stores, ids) == {
            "rows": first,
            "pgvector": {s_young, d_old},
            "qdrant": {s_young, d_old},
        }

        clock[0] = real_now + timedelta(days=25)  # s_young is 35 days old now: past 30; d_old 65: within 365
        second = {s_global, d_old}

        async def second_round_done() -> bool:
            return (await where(pool, stores, ids))["rows"] == second

        await until(second_round_done)
        assert await where(pool, stores, ids) == {"rows": second, "pgvector": {d_old}, "qdrant": {d_old}}
    finally:
        stop.set()
        await asyncio.wait_for(loop, 10)
    assert loop.exception() is None
