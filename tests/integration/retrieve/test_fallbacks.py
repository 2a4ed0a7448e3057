"""Every degradation answers (never an error) and says which tier served, which fell back and why."""

from __future__ import annotations

import time

import asyncpg
import pytest
from nats.aio.client import Client
from prometheus_client import REGISTRY

from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.stack import run_services

from .conftest import DIM, SIG, ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

V = unit(1, 0, 0, 0)


async def retrieve(nc: Client, **kw: object) -> RetrieveResult:
    result: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(**kw), timeout=10)  # type: ignore[arg-type]
    return result


def fallbacks_seen(reason: str) -> float:
    return REGISTRY.get_sample_value("memoryd_retrieve_fallbacks_total", {"reason": reason}) or 0.0


def tiers(res: RetrieveResult) -> list[tuple[str, bool]]:
    return [(t.tier, t.served) for t in res.tiers]


@pytest.mark.parametrize("strategy", ["hybrid", "semantic"])
async def test_embed_absent_falls_back_to_keyword(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, strategy: str
) -> None:
    who = owner()
    mid = await put(pool, who, "the quokka lives on an island", vector=V)
    before = fallbacks_seen("embed_unavailable")
    res = await retrieve(nc, owner=who, query="quokka island", strategy=strategy)
    assert [m.id for m in res.memories] == [mid]
    assert res.memories[0].tier == "keyword" and res.memories[0].fts_rank == 1
    assert res.fallbacks == ["pgvector->keyword:embed_unavailable"]
    vector = next(t for t in res.tiers if t.tier == "pgvector")
    assert not vector.served and vector.reason is not None and "embed service" in vector.reason
    assert next(t for t in res.tiers if t.tier == "keyword").served
    assert fallbacks_seen("embed_unavailable") == before + 1


async def test_keyword_unusable_goes_vector_only_or_recent(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    mid = await put(pool, who, "punctuation friends", vector=V)
    embed = await ScriptedEmbed({"?!?": V}).start(nc)
    try:
        res = await retrieve(nc, owner=who, query="?!?")
    finally:
        await embed.stop()
    assert [m.id for m in res.memories] == [mid] and res.memories[0].tier == "pgvector"
    assert tiers(res) == [("keyword", False), ("pgvector", True)]
    assert res.fallbacks == ["keyword->pgvector:keyword_unusable"]
    assert "no letter or digit" in (res.tiers[0].reason or "")
    # without an embedder (and a query whose vector retrieve has not kept) nothing can search:
    # newest first, both reasons given
    res = await retrieve(nc, owner=who, query="!?!")
    assert [m.id for m in res.memories] == [mid] and res.memories[0].tier == "recent"
    assert res.fallbacks == ["keyword->pgvector:keyword_unusable", "pgvector->recent:embed_unavailable"]
    # semantic with no embedder and an unusable keyword query: recent too
    res = await retrieve(nc, owner=who, query="🙂", strategy="semantic")
    assert res.fallbacks == ["pgvector->keyword:embed_unavailable", "keyword->recent:keyword_unusable"]
    assert [m.tier for m in res.memories] == ["recent"]


async def test_empty_query_is_newest_first(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    mid = await put(pool, who, "anything at all")
    res = await retrieve(nc, owner=who, query="   ")
    assert [m.id for m in res.memories] == [mid]
    assert res.fallbacks == ["keyword->recent:empty_query"]


async def test_signature_mismatch_and_reindex_fall_back_to_keyword(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig
) -> None:
    who = owner()
    mid = await put(pool, who, "wombat burrow", vector=V)
    embed = await ScriptedEmbed({"wombat": V}).start(nc, signature="test:other:4")
    try:
        for pending, code in [(None, "signature_mismatch"), ("test:other:4", "reindex_in_progress")]:
            await pool.execute("UPDATE memory_vec_meta SET pending_signature = $1 WHERE store = 'pgvector'", pending)
            async with run_services(["retrieve"], config):  # a fresh service: no cached meta
                res = await retrieve(nc, owner=who, query="wombat")
            assert [m.id for m in res.memories] == [mid]
            assert res.fallbacks == [f"pgvector->keyword:{code}"]
            assert SIG in (res.tiers[1].reason or "")
    finally:
        await embed.stop()
        await pool.execute("UPDATE memory_vec_meta SET pending_signature = NULL WHERE store = 'pgvector'")


async def test_dimension_mismatch_falls_back(pool: asyncpg.Pool, nc: Client, config: ServiceConfig) -> None:
    who = owner()
    mid = await put(pool, who, "platypus river", vector=V)
    embed = await ScriptedEmbed({"platypus": [*V, 0.0]}).start(nc)  # 5 dimensions under the 4-d signature
    try:
        async with run_services(["retrieve"], config):
            res = await retrieve(nc, owner=who, query="platypus")
    finally:
        await embed.stop()
    assert [m.id for m in res.memories] == [mid]
    assert res.fallbacks == ["pgvector->keyword:dimension_mismatch"]
    assert f"{DIM} dimensions" in (res.tiers[1].reason or "")


async def test_embed_timeout_then_circuit_open(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_RETRIEVE_EMBED_TIMEOUT_S", "0.2")
    monkeypatch.setenv("MEMORYD_RETRIEVE_BREAKER_THRESHOLD", "2")
    monkeypatch.setenv("MEMORYD_RETRIEVE_BREAKER_COOLDOWN_S", "600")
    who = owner()
    mid = await put(pool, who, "echidna spines", vector=V)
    embed = await ScriptedEmbed({"echidna": V}, delay_s=2.0).start(nc)
    try:
        async with run_services(["retrieve"], config):
            codes = []
            for _ in range(3):
                res = await retrieve(nc, owner=who, query="echidna")
                assert [m.id for m in res.memories] == [mid]
                codes += res.fallbacks
            started = time.perf_counter()
            res = await retrieve(nc, owner=who, query="echidna")
            elapsed = time.perf_counter() - started
    finally:
        await embed.stop()
    assert codes == [
        "pgvector->keyword:embed_timeout",
        "pgvector->keyword:embed_timeout",
        "pgvector->keyword:embed_circuit_open",
    ]
    assert res.fallbacks == ["pgvector->keyword:embed_circuit_open"]
    assert elapsed < 2.0  # the open breaker does not wait for the embedder (generous bound)


async def test_a_vector_store_slower_than_its_timeout_falls_back_to_keyword(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector's table held by another transaction: the vector search waits on the lock, is cut off
    after ``storeTimeoutS``, and keyword serves, said so (the search statement is cancelled)."""
    monkeypatch.setenv("MEMORYD_RETRIEVE_STORE_TIMEOUT_S", "0.5")
    who = owner()
    mid = await put(pool, who, "the numbat eats termites", vector=V)
    embed = await ScriptedEmbed({"numbat termites": V}).start(nc)
    before = fallbacks_seen("store_timeout")
    try:
        async with run_services(["retrieve"], config), pool.acquire() as holder:
            async with holder.transaction():
                await holder.execute("LOCK TABLE memory_embeddings IN ACCESS EXCLUSIVE MODE")
                started = time.monotonic()
                res = await retrieve(nc, owner=who, query="numbat termites", strategy="hybrid")
                waited = time.monotonic() - started
            after = await retrieve(nc, owner=who, query="numbat termites", strategy="hybrid")  # lock released
    finally:
        await embed.stop()
    assert 0.5 <= waited < 5
    assert res.fallbacks == ["pgvector->keyword:store_timeout"]
    assert [m.id for m in res.memories] == [mid] and res.memories[0].tier == "keyword"
    vector = next(t for t in res.tiers if t.tier == "pgvector")
    assert not vector.served and vector.reason == "pgvector did not answer within 0.5 s"
    assert fallbacks_seen("store_timeout") == before + 1
    assert after.fallbacks == [] and [m.id for m in after.memories] == [mid]
    assert after.memories[0].vec_rank == 1
