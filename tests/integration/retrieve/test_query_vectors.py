"""A repeated query is served from retrieve's own query-vector cache: no embed round trip, and
still the vector tier when the embed service has gone away since."""

from __future__ import annotations

import asyncpg
import pytest
from nats.aio.client import Client
from prometheus_client import REGISTRY

from shared.bus.rpc_client import call
from shared.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.service import ServiceContext

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

V = unit(1, 0, 0, 0)


async def retrieve(nc: Client, who: str, query: str) -> RetrieveResult:
    req = RetrieveRequest(owner=who, query=query, strategy="semantic")
    result: RetrieveResult = await call(nc, "retrieve", req, timeout=10)
    return result


def lookups(result: str) -> float:
    return REGISTRY.get_sample_value("memoryd_retrieve_query_vector_cache_total", {"result": result}) or 0.0


async def test_a_repeated_query_skips_the_embed_service(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    mid = await put(pool, who, "the platypus lays eggs", vector=V)
    embed = await ScriptedEmbed({"platypus eggs": V}).start(nc)
    try:
        first = await retrieve(nc, who, "platypus eggs")
        hits = lookups("hit")
        again = await retrieve(nc, who, "platypus eggs")
        assert embed.calls == ["platypus eggs"]  # asked once
        assert lookups("hit") == hits + 1
    finally:
        await embed.stop()
    assert [m.id for m in first.memories] == [mid] == [m.id for m in again.memories]
    assert again.memories[0].tier == "pgvector" and again.fallbacks == []
    # the embed service is gone: the kept vector still searches, a new query falls back
    kept = await retrieve(nc, who, "platypus eggs")
    assert kept.memories[0].tier == "pgvector" and kept.fallbacks == []
    new = await retrieve(nc, who, "platypus")
    assert new.fallbacks == ["pgvector->keyword:embed_unavailable"]
