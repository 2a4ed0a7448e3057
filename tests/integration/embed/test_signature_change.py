"""A signature change (here: the dynamic-int8 variant) then `memoryd reindex`: the old signature
keeps serving until the backfill completes, then the active signature switches and no memory
is left with the old one (its vectors are dropped)."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.ops import HealthRequest, ReindexRequest, ReindexResult
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from services.embed.adapters import LocalEmbedder
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import (
    SIG,
    SIG_INT8,
    add_memories,
    cosine,
    embedded_count,
    job_of,
    publish,
    queue_drained,
    run_cli,
    vectors_of,
)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embed-models")


#: The first start with dynamic-int8 quantizes the model in a child process before it is ready:
#: CPU-bound, about 10 s on an idle machine and over 30 s on a busy 2-core one.
INT8_BUILD_READY_S = 120.0


async def test_signature_change_then_reindex(
    nats_server: EmbeddedNats,
    nc: Client,
    pool: asyncpg.Pool,
    config: ServiceConfig,
    model_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_MODEL_CACHE_DIR", str(model_cache))
    monkeypatch.setenv("MEMORYD_EMBED_META_POLL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_RETIRE_GRACE_S", "0")
    texts = [f"Erin's reading list item {i}: a book about {t}." for i, t in enumerate(["bees", "ships", "maps"] * 10)]
    mems = await add_memories(pool, "erin", texts)
    ids = [m.id for m in mems]
    js = nc.jetstream()
    async with run_services(["embed"], config):
        await publish(js, [job_of(m) for m in mems])
        await eventually(lambda: _count(pool, ids, SIG), what="first embedding")
        await eventually(lambda: queue_drained(js), what="jobs acked")

    monkeypatch.setenv("MEMORYD_EMBED_QUANTIZATION", "dynamic-int8")
    async with run_services(["embed"], config, timeout=INT8_BUILD_READY_S):
        meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
        assert (meta["embedding_signature"], meta["pending_signature"]) == (SIG, SIG_INT8)
        assert await pool.fetchval("SELECT count(*) FROM memories WHERE needs_reindex") == len(mems)
        # Retrieval still searches the old vectors: query vectors keep the old signature.
        before: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["books about bees"]))
        assert before.signature == SIG
        health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.embed")
        assert f"reindex to {SIG_INT8} pending" in health.checks["embedder"]
        # a memory created meanwhile gets a vector of the searched (float) signature too, from its model
        (late,) = await add_memories(pool, "erin", ["Erin's reading list: a novel about lighthouses."])
        await publish(js, [job_of(late)])
        await eventually(lambda: _count(pool, [late.id], SIG_INT8), what="the new memory embedded")
        searched = await vectors_of(pool, [late.id], SIG)
        float_model = LocalEmbedder.default(cache_dir=model_cache)
        assert cosine(searched[late.id], float_model.embed([late.content])[0]) > 0.9999

        code, out, err = await run_cli(
            ["reindex", "--interval", "0.2", "--timeout", "180", "--batch-size", "7"],
            {"MEMORYD_NATS_URL": nats_server.url},
        )
        assert code == 0, err
        # pending is counted after queueing: the worker may have embedded some already
        assert re.search(rf"reindex to {re.escape(SIG_INT8)}: queued {len(mems)}, pending \d+", out), out
        assert f"reindex complete: active signature {SIG_INT8}" in out

        assert await _count(pool, ids, SIG_INT8)
        await eventually(lambda: _no_old_vectors(pool), what="old vectors dropped")

        async def switched() -> bool:
            result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["books about ships"]))
            return result.signature == SIG_INT8

        await eventually(switched, what="query vectors of the new signature")
        again: ReindexResult = await call(nc, "reindex", ReindexRequest())
        assert (again.queued, again.pending, again.active_signature) == (0, 0, SIG_INT8)

    assert (
        await pool.fetchval(
            "SELECT count(*) FROM memories WHERE embedding_signature IS DISTINCT FROM $1 OR needs_reindex", SIG_INT8
        )
        == 0
    )
    meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
    assert (meta["embedding_signature"], meta["pending_signature"]) == (SIG_INT8, None)
    assert "retired" not in meta["details"] and meta["details"]["quantization"] == "dynamic-int8"
    # The stored int8 vectors are each text embedded alone (the variant is batch-sensitive).
    stored = await vectors_of(pool, ids, SIG_INT8)
    assert len(stored) == len(mems)
    int8 = LocalEmbedder.dynamic_int8(cache_dir=model_cache)
    for m in mems[:5]:
        assert cosine(stored[m.id], int8.embed([m.content])[0]) > 0.9999
    assert abs(float(np.linalg.norm(stored[mems[0].id])) - 1) < 1e-5


async def _count(pool: asyncpg.Pool, ids: list[str], sig: str) -> bool:
    return await embedded_count(pool, ids, sig) == len(ids)


async def _no_old_vectors(pool: asyncpg.Pool) -> bool:
    return await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE signature = $1", SIG) == 0


async def test_reverted_change_is_abandoned_and_its_vectors_dropped(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_MODEL_CACHE_DIR", str(model_cache))
    monkeypatch.setenv("MEMORYD_EMBED_META_POLL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_RETIRE_GRACE_S", "0")
    monkeypatch.setenv("MEMORYD_EMBED_QUANTIZATION", "dynamic-int8")
    mems = await add_memories(pool, "frank", [f"Frank's garden plan {i}: plant {i} tulips." for i in range(6)])
    js = nc.jetstream()
    async with run_services(["embed"], config):  # int8 active (or made active by a reindex)
        await call(nc, "reindex", ReindexRequest())
        await publish(js, [job_of(m) for m in mems])
        await eventually(lambda: _count(pool, [m.id for m in mems], SIG_INT8), what="int8 vectors")
        await eventually(lambda: _active(pool, SIG_INT8), what="int8 active")

    monkeypatch.setenv("MEMORYD_EMBED_QUANTIZATION", "none")
    async with run_services(["embed"], config):  # a change to the default model begins...
        meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
        assert (meta["embedding_signature"], meta["pending_signature"]) == (SIG_INT8, SIG)
        query: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["tulips"]))
        assert query.signature == SIG_INT8  # the active signature still answers queries
        await publish(js, [job_of(m, "reindex") for m in mems[:3]])
        await eventually(lambda: _count(pool, [m.id for m in mems[:3]], SIG), what="some default vectors")

    monkeypatch.setenv("MEMORYD_EMBED_QUANTIZATION", "dynamic-int8")
    async with run_services(["embed"], config):  # ...and is reverted
        await eventually(lambda: _no_old_vectors(pool), what="the abandoned signature's vectors dropped")
        meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
        assert (meta["embedding_signature"], meta["pending_signature"]) == (SIG_INT8, None)
        result: ReindexResult = await call(nc, "reindex", ReindexRequest(owner="frank"))
        # All six: three hold vectors of the abandoned signature, three were marked when it began.
        assert (result.queued, result.pending) == (6, 6)
        await eventually(lambda: _count(pool, [m.id for m in mems], SIG_INT8), what="back to int8")
        await eventually(lambda: queue_drained(js), what="jobs acked")


async def _active(pool: asyncpg.Pool, sig: str) -> bool:
    return await pool.fetchval("SELECT embedding_signature FROM memory_vec_meta WHERE store = 'pgvector'") == sig
