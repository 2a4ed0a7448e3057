"""``open_stores``: pgvector always, Qdrant when configured; local clients shared per
location; the primary store for search and why."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import asyncpg
import numpy as np

from shared.settings.env import QdrantConfig, ServiceConfig
from shared.vectors import registry
from shared.vectors.port import VectorItem

from .world import World, unit


def cfg(url: str | None) -> ServiceConfig:
    return ServiceConfig(qdrant=QdrantConfig(url=url, collection=f"r{uuid.uuid4().hex[:6]}"))


async def test_pgvector_only_when_qdrant_is_not_configured(pool: asyncpg.Pool) -> None:
    stores = await registry.open_stores(cfg(None), pool)
    assert [s.name for s in stores.all] == ["pgvector"]
    store, reason = await stores.primary("local:minilm:8")
    assert store is stores.pgvector and reason is None
    await stores.close()


async def test_local_qdrant_is_shared_and_primary_when_healthy(pool: asyncpg.Pool) -> None:
    config = cfg(":memory:")
    one = await registry.open_stores(config, pool)
    two = await registry.open_stores(config, pool)
    assert one.qdrant is not None and two.qdrant is not None
    assert one.qdrant.client is two.qdrant.client  # same in-process data for every service
    signature = f"test:{uuid.uuid4().hex[:6]}:8"
    store, reason = await one.primary(signature)
    assert store is one.pgvector and reason is not None and "does not exist" in reason
    await two.qdrant.ensure(signature, 8)
    store, reason = await one.primary(signature)
    assert store is one.qdrant and reason is None
    # writes and deletes fan out to every store
    world = World(pool, one.pgvector, signature)
    mid = world.add("alice", unit(np.random.default_rng(41), 8))
    await world.flush()
    assert await one.upsert(signature, [world.rows[mid].item()]) == {"pgvector": 1, "qdrant": 1}
    assert await two.delete("alice", [mid]) == {"pgvector": 1, "qdrant": 1}
    await one.close()
    assert one.qdrant is None
    assert (await two.qdrant.status(signature)).healthy  # still open for the second user
    await two.close()
    assert config.qdrant.url not in registry._LOCAL


async def test_path_mode_and_unreachable_server(pool: asyncpg.Pool, tmp_path: Path) -> None:
    stores = await registry.open_stores(cfg(str(tmp_path / "qdrant")), pool)
    assert stores.qdrant is not None and stores.qdrant.local
    await stores.qdrant.ensure("local:minilm:8", 8)
    n = await stores.qdrant.upsert(
        "local:minilm:8", [VectorItem(memory_id=str(uuid.uuid4()), owner="a", vector=np.ones(8))]
    )
    assert n == 1
    await stores.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stores = await registry.open_stores(cfg(f"http://127.0.0.1:{port}"), pool)
    assert stores.qdrant is not None and not stores.qdrant.local
    store, reason = await stores.primary("local:minilm:8")
    assert store is stores.pgvector and reason is not None and reason.startswith("qdrant: qdrant unavailable")
    await stores.close()
