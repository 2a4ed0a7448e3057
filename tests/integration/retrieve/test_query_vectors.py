"""A repeated query is served from retrieve's own query-vector cache: no embed round trip, still
the vector tier when the embed service has gone away since, and never once the stores search
another signature."""

from __future__ import annotations

import asyncpg
import pytest
from nats.aio.client import Client
from prometheus_client import REGISTRY

from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.stack import run_services

from .conftest import SIG, ScriptedEmbed, owner, put, unit

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


async def test_kept_vectors_are_dropped_once_the_stores_search_another_signature(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_RETRIEVE_META_TTL_S", "0")  # the stores' signature read every time
    who = owner()
    await put(pool, who, "the wombat digs burrows", vector=V)
    embed = await ScriptedEmbed({"wombat burrows": V}).start(nc)
    try:
        async with run_services(["retrieve"], config):
            await retrieve(nc, who, "wombat burrows")
            await retrieve(nc, who, "wombat burrows")
            assert embed.calls == ["wombat burrows"]  # the second was kept
            # a model switch completed: pgvector searches another signature now
            switch = "UPDATE memory_vec_meta SET embedding_signature = $1 WHERE store = 'pgvector'"
            await pool.execute(switch, "local:next:4")
            try:
                switched = await retrieve(nc, who, "wombat burrows")
            finally:
                await pool.execute(switch, SIG)
    finally:
        await embed.stop()
    assert embed.calls == ["wombat burrows"] * 2  # asked again, not answered with the old model's vector
    assert switched.fallbacks == ["pgvector->keyword:signature_mismatch"]
