"""The remote source (`auto` with `MEMORYD_EMBED_REMOTE_URL` set): OpenAI-compatible
`/v1/embeddings` on the scripted server, for queries and jobs; its failures are typed."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.errors import DependencyDown
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.ops import HealthRequest
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services

from .helpers import add_memories, cosine, embedded_count, job_of, publish, queue_drained, vectors_of

REMOTE_SIG = "remote:fake-embed:384:turn1"


async def test_remote_source_for_queries_and_jobs(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeLlm(model="fake-embed") as llm:
        monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "auto")
        monkeypatch.setenv("MEMORYD_EMBED_REMOTE_URL", llm.base_url)
        monkeypatch.setenv("MEMORYD_EMBED_REMOTE_MODEL", "fake-embed")
        monkeypatch.setenv("MEMORYD_EMBED_REMOTE_DIM", "384")
        monkeypatch.setenv("MEMORYD_EMBED_REMOTE_API_KEY", "sk-test")
        mems = await add_memories(pool, "dana", ["Dana plays the cello.", "Dana's dog is called Pixel."])
        async with run_services(["embed"], config):
            result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["hello there", "cello lessons"]))
            assert result.signature == REMOTE_SIG and result.dim == 384
            for got, text in zip(result.vectors, ["hello there", "cello lessons"], strict=True):
                assert cosine(np.asarray(got), np.asarray(FakeLlm.embedding(text))) > 0.9999
            assert llm.embedding_requests[-1]["model"] == "fake-embed"
            assert "dimensions" not in llm.embedding_requests[-1]

            js = nc.jetstream()
            await publish(js, [job_of(m) for m in mems])
            ids = [m.id for m in mems]
            await eventually(lambda: _done(pool, ids), what="remote vectors written")
            await eventually(lambda: queue_drained(js), what="jobs acked")
            stored = await vectors_of(pool, ids, REMOTE_SIG)
            assert cosine(stored[mems[0].id], np.asarray(FakeLlm.embedding(mems[0].content))) > 0.9999

            llm.fail_embeddings(503)
            with pytest.raises(DependencyDown):
                await call(nc, "embed", EmbedRequest(texts=["a question the cache has not seen"]))
            ok: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["a question the cache has not seen"]))
            assert ok.cached == 0 and len(ok.vectors[0]) == 384

            health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.embed")
            assert health.checks["embedder"] == (f"ok {REMOTE_SIG} (source=auto: MEMORYD_EMBED_REMOTE_URL is set)")
        meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
        assert meta["embedding_signature"] == REMOTE_SIG
        assert meta["details"]["source"] == "remote" and meta["details"]["model"] == "fake-embed"


async def _done(pool: asyncpg.Pool, ids: list[str]) -> bool:
    return await embedded_count(pool, ids, REMOTE_SIG) == len(ids)
