"""Tier 2 through the service: Qdrant (qdrant-client local mode, ``MEMORYD_QDRANT_URL=:memory:``)
serves first; down, wrong dimension or missing collection -> pgvector, said so.

Local ``:memory:`` clients are shared per process by ``shared.vectors.registry``, so a store
opened by the test writes into the same Qdrant the in-process service searches.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.settings.env import ServiceConfig
from shared.vectors.port import VectorItem
from shared.vectors.qdrant import QdrantStore
from shared.vectors.registry import VectorStores, open_stores
from tests.support.stack import run_services, service_config

from .conftest import SIG, ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

Q = unit(1, 0, 0, 0)


def qdrant_config(nats_server: EmbeddedNats, pg_dsn: str, url: str) -> ServiceConfig:
    extra = {"MEMORYD_QDRANT_URL": url, "MEMORYD_QDRANT_COLLECTION": f"t{uuid.uuid4().hex[:8]}"}
    return service_config(nats_server.url, pg_dsn, extra)


@pytest.fixture
async def local_qdrant(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool
) -> AsyncIterator[tuple[ServiceConfig, VectorStores]]:
    cfg = qdrant_config(nats_server, pg_dsn, ":memory:")
    stores = await open_stores(cfg, pool)
    yield cfg, stores
    await stores.close()


async def _fixture(pool: asyncpg.Pool, qdrant: QdrantStore, dim: int = 4) -> tuple[str, dict[str, str]]:
    """pgvector ranks A first; Qdrant holds different vectors and ranks B first."""
    who = owner()
    ids = {
        "A": await put(pool, who, "kestrel hovering", vector=Q),
        "B": await put(pool, who, "kestrel nesting", vector=unit(0, 1, 0, 0)),
    }
    await qdrant.ensure(SIG, dim)
    if dim == 4:
        await qdrant.upsert(
            SIG,
            [
                VectorItem(memory_id=ids["A"], owner=who, vector=unit(0, 1, 0, 0)),
                VectorItem(memory_id=ids["B"], owner=who, vector=Q),
            ],
        )
        await qdrant.activate(SIG)
    return who, ids


async def test_qdrant_serves_semantic_and_hybrid(
    pool: asyncpg.Pool, nc: Client, local_qdrant: tuple[ServiceConfig, VectorStores]
) -> None:
    cfg, stores = local_qdrant
    assert stores.qdrant is not None
    who, ids = await _fixture(pool, stores.qdrant)
    embed = await ScriptedEmbed({"kestrel": Q}).start(nc)
    try:
        async with run_services(["retrieve"], cfg):
            sem: RetrieveResult = await call(
                nc, "retrieve", RetrieveRequest(owner=who, query="kestrel", strategy="semantic")
            )
            hyb: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(owner=who, query="kestrel"))
            other: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(owner=owner(), query="kestrel"))
    finally:
        await embed.stop()
    assert [m.id for m in sem.memories] == [ids["B"], ids["A"]]  # Qdrant's order, not pgvector's
    assert [m.tier for m in sem.memories] == ["qdrant", "qdrant"]
    assert [(t.tier, t.served) for t in sem.tiers] == [("qdrant", True)] and sem.fallbacks == []
    assert {(t.tier, t.served) for t in hyb.tiers} == {("keyword", True), ("qdrant", True)}
    assert hyb.memories[0].vec_rank is not None
    assert other.memories == []  # another owner sees nothing through Qdrant either


async def test_qdrant_wrong_dimension_falls_back_to_pgvector(
    pool: asyncpg.Pool, nc: Client, local_qdrant: tuple[ServiceConfig, VectorStores]
) -> None:
    cfg, stores = local_qdrant
    assert stores.qdrant is not None
    who, ids = await _fixture(pool, stores.qdrant, dim=8)  # the collection has 8 dimensions
    embed = await ScriptedEmbed({"kestrel": Q}).start(nc)
    try:
        async with run_services(["retrieve"], cfg):
            res: RetrieveResult = await call(
                nc, "retrieve", RetrieveRequest(owner=who, query="kestrel", strategy="semantic")
            )
    finally:
        await embed.stop()
    assert [m.id for m in res.memories] == [ids["A"], ids["B"]]  # pgvector's order
    assert res.fallbacks == ["qdrant->pgvector:dimension_mismatch"]
    assert "dimension 8" in (res.tiers[0].reason or "")
    assert [m.tier for m in res.memories] == ["pgvector", "pgvector"]


async def test_qdrant_down_falls_back_to_pgvector_then_skips_it(
    pool: asyncpg.Pool, nc: Client, nats_server: EmbeddedNats, pg_dsn: str
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = qdrant_config(nats_server, pg_dsn, f"http://127.0.0.1:{port}")
    who = owner()
    mid = await put(pool, who, "heron wading", vector=Q)
    embed = await ScriptedEmbed({"heron": Q}).start(nc)
    try:
        async with run_services(["retrieve"], cfg):
            results = [
                await call(nc, "retrieve", RetrieveRequest(owner=who, query="heron", strategy="semantic"))
                for _ in range(4)
            ]
    finally:
        await embed.stop()
    assert all([m.id for m in r.memories] == [mid] for r in results)
    assert all(r.memories[0].tier == "pgvector" for r in results)
    codes = [r.fallbacks for r in results]
    assert codes[:3] == [["qdrant->pgvector:store_down"]] * 3
    assert codes[3] == ["qdrant->pgvector:store_circuit_open"]  # 3 failures open the breaker


async def test_missing_collection_falls_back(
    pool: asyncpg.Pool, nc: Client, local_qdrant: tuple[ServiceConfig, VectorStores]
) -> None:
    cfg, _stores = local_qdrant
    who = owner()
    mid = await put(pool, who, "ibis probing", vector=Q)
    embed = await ScriptedEmbed({"ibis": Q}).start(nc)
    try:
        async with run_services(["retrieve"], cfg):
            res: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(owner=who, query="ibis"))
    finally:
        await embed.stop()
    assert [m.id for m in res.memories] == [mid]
    assert res.fallbacks == ["qdrant->pgvector:store_down"]
    assert "does not exist" in (res.tiers[1].reason or "")
