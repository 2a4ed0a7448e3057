"""Deleting and changing memories reaches the external vector store (Qdrant, local mode here):
the receipt counts the points removed, another owner's points stay, the filter payload follows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.local.nats import EmbeddedNats
from shared.settings.env import ServiceConfig
from shared.vectors.port import VectorItem
from shared.vectors.registry import VectorStores, open_stores
from tests.support.stack import run_services, service_config

SIGNATURE = "local:test-model:4"


@pytest.fixture
def qdrant_config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    return service_config(nats_server.url, pg_dsn, {"MEMORYD_QDRANT_URL": ":memory:"})


@pytest.fixture
async def stores(qdrant_config: ServiceConfig, pool: asyncpg.Pool) -> AsyncIterator[VectorStores]:
    """The same in-process Qdrant the service opens (local clients are shared per location)."""
    async with run_services(["ingest"], qdrant_config):
        opened = await open_stores(qdrant_config, pool)
        assert opened.qdrant is not None
        yield opened
        await opened.close()


async def _put(stores: VectorStores, owner: str, memory_id: str, session_id: str | None = None) -> None:
    assert stores.qdrant is not None
    vec = np.array([1.0, 0.5, 0.25, 0.0], dtype=np.float32)
    await stores.qdrant.upsert(
        SIGNATURE, [VectorItem(memory_id=memory_id, owner=owner, vector=vec, session_id=session_id)]
    )


async def _points(stores: VectorStores, owner: str) -> list[dict[str, object]]:
    assert stores.qdrant is not None
    client = stores.qdrant.client
    out: list[dict[str, object]] = []
    for collection in (await client.get_collections()).collections:
        points, _ = await client.scroll(collection.name, limit=100, with_payload=True)
        out += [dict(p.payload or {}) | {"id": str(p.id)} for p in points if (p.payload or {}).get("owner") == owner]
    return out


async def test_delete_and_clear_remove_qdrant_points(stores: VectorStores, nc: Client, owner: str) -> None:
    client = MemoryClient(nc)
    other = f"{owner}-other"
    mine = (await client.create(owner, "mine")).memory.id
    theirs = (await client.create(other, "theirs")).memory.id
    await _put(stores, owner, mine)
    await _put(stores, other, theirs)

    gone = await client.delete(owner, mine)
    assert (gone.removed.rows, gone.removed.qdrant_points) == (1, 1)
    assert await _points(stores, owner) == []
    assert [p["id"] for p in await _points(stores, other)] == [theirs]

    cleared = await client.clear(other)
    assert (cleared.count, cleared.removed.qdrant_points) == (1, 1)
    assert await _points(stores, other) == []


async def test_update_mirrors_the_filter_payload(stores: VectorStores, nc: Client, owner: str) -> None:
    client = MemoryClient(nc)
    mid = (await client.create(owner, "moves to another session", session_id="a")).memory.id
    await _put(stores, owner, mid, session_id="a")
    await client.update(owner, mid, session_id="b", memory_type="procedural")
    [point] = await _points(stores, owner)
    assert (point["session_id"], point["memory_type"]) == ("b", "procedural")
