"""``vectorQuantization=half`` set at run time: a signature change like a model change.

The running embed worker starts the change to ``...:half`` (pending; queries keep the full
signature, retrieval keeps searching it), the reindex writes halfvec rows beside the full ones,
search switches when the backfill completes, the full vectors are retired, and what holds the
vectors is then at least 1.9x smaller. ``engine.status`` names the stored signature and storage.
"""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult, ReindexRequest
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult, RetrieveRequest, RetrieveResult
from shared.settings.cache import announce_change
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorQuery
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import SIG, add_memories, cosine, embedded_count, job_of, publish, queue_drained

SIG_HALF = f"{SIG}:half"
TOPICS = ["herons", "tulips", "violins", "glaciers", "sourdough", "kayaks", "comets", "beekeeping"]
TEXTS = [f"Ida's note {i}: she has been reading about {t} lately." for i, t in enumerate(TOPICS * 5)]

#: bytes of the stored vectors of one signature, whichever column holds them
VECTOR_BYTES = (
    "SELECT coalesce(sum(pg_column_size(embedding)), 0) AS full, coalesce(sum(pg_column_size(embedding_half)), 0)"
    " AS half, count(*) AS n FROM memory_embeddings WHERE signature = $1"
)


async def test_half_storage_is_a_signature_change_and_halves_the_bytes(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_META_POLL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_RETIRE_GRACE_S", "0")
    monkeypatch.setenv("MEMORYD_RETRIEVE_META_TTL_S", "0.3")
    mems = await add_memories(pool, "ida", TEXTS)
    ids = [m.id for m in mems]
    js = nc.jetstream()
    async with run_services(["embed", "retrieve"], config):
        await publish(js, [job_of(m) for m in mems])
        await eventually(lambda: _all(pool, ids, SIG), what="full-precision vectors")
        full = await pool.fetchrow(VECTOR_BYTES, SIG)
        assert (full["n"], full["half"]) == (len(mems), 0)
        full_vectors = {
            str(r["memory_id"]): np.asarray(r["embedding"].to_numpy(), dtype=np.float32)
            for r in await pool.fetch("SELECT memory_id, embedding FROM memory_embeddings WHERE signature = $1", SIG)
        }

        await put_values(pool, None, {"vectorQuantization": "half"})
        await announce_change(nc, None)

        async def pending() -> bool:
            status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest())
            want = {"signature": SIG, "dim": 384, "pending_signature": SIG_HALF}
            return bool(status.embedding["stores"]["pgvector"] == want)

        await eventually(pending, timeout=30, what="the change to halfvec pending")
        query: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["herons"]))
        assert query.signature == SIG  # retrieval keeps searching the full vectors until the switch
        assert _semantic_hits(await _ask(nc))

        await call(nc, "reindex", ReindexRequest())
        await eventually(lambda: _all(pool, ids, SIG_HALF), what="halfvec vectors")
        await eventually(lambda: _gone(pool, SIG), what="full-precision vectors retired")
        await eventually(lambda: _query_signature(nc, SIG_HALF), what="queries switched to the half signature")
        await eventually(lambda: queue_drained(js), what="jobs acked")

        half = await pool.fetchrow(VECTOR_BYTES, SIG_HALF)
        assert (half["n"], half["full"]) == (len(mems), 0)
        assert full["full"] / half["half"] >= 1.9, (full["full"], half["half"])
        index = await pool.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_embeddings' AND indexdef LIKE $1",
            "%halfvec_cosine_ops%" + SIG_HALF + "%",
        )
        assert index is not None and "embedding_half" in index

        status = await call(nc, "engine.status", EngineStatusRequest())
        assert status.embedding["stores"]["pgvector"] == {"signature": SIG_HALF, "dim": 384, "pending_signature": None}
        stored = status.vector_stores["pgvector"]
        assert stored["active_signature"] == SIG_HALF and stored["vectors"] == len(mems)
        assert "storage: halfvec" in stored["detail"]
        meta = await pool.fetchval("SELECT details FROM memory_vec_meta WHERE store = 'pgvector'")
        assert meta["vector_quantization"] == "half" and "retired" not in meta

        # the same vectors, rounded: each half vector is its full one within float16 precision,
        # and search through the halfvec index finds each memory first for its own text
        store = PgVectorStore(pool)
        for r in await pool.fetch(
            "SELECT memory_id, embedding_half::vector AS v FROM memory_embeddings WHERE signature = $1", SIG_HALF
        ):
            assert cosine(np.asarray(r["v"].to_numpy()), full_vectors[str(r["memory_id"])]) > 0.9999
        for m in mems[:8]:
            hits = await store.search(SIG_HALF, VectorQuery(owner="ida", vector=full_vectors[m.id], limit=3))
            assert hits[0].memory_id == m.id and hits[0].score > 0.999
        reply = await _ask(nc)
        assert _semantic_hits(reply) and "herons" in reply.memories[0].content


async def _all(pool: asyncpg.Pool, ids: list[str], sig: str) -> bool:
    return await embedded_count(pool, ids, sig) == len(ids)


async def _gone(pool: asyncpg.Pool, sig: str) -> bool:
    return await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE signature = $1", sig) == 0


async def _query_signature(nc: Client, sig: str) -> bool:
    result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["herons"]))
    return result.signature == sig


async def _ask(nc: Client) -> RetrieveResult:
    return await call(nc, "retrieve", RetrieveRequest(owner="ida", query="herons", strategy="semantic"))


def _semantic_hits(result: RetrieveResult) -> bool:
    return bool(result.memories) and any(t.tier == "pgvector" and t.served for t in result.tiers)
