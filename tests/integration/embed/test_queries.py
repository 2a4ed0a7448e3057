"""Query embeddings over `mem.v1.rpc.embed` (service in-process): vectors equal to the local
model's, the cache answering repeats, concurrent requests sharing inference batches."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.errors import ValidationFailed
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.ops import HealthRequest
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from services.embed.adapters import LocalEmbedder
from shared.settings.env import ServiceConfig
from tests.support.stack import run_services

from .helpers import SIG, cosine, sample


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "auto")
    monkeypatch.delenv("MEMORYD_EMBED_REMOTE_URL", raising=False)


async def test_query_vectors_cache_and_batching(nc: Client, config: ServiceConfig) -> None:
    texts = ["Where does Carol live?", "favourite tea in the morning", "which database did we pick"]
    reference = LocalEmbedder.default().embed(texts)
    async with run_services(["embed"], config):
        result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=texts))
        assert result.signature == SIG and result.dim == 384 and result.cached == 0
        vectors = np.asarray(result.vectors, dtype=np.float32)
        assert vectors.shape == (3, 384)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        for got, want in zip(vectors, reference, strict=True):
            assert cosine(got, want) > 0.9999

        hits_before = sample("memoryd_embed_cache_total", {"result": "hit"})
        again: EmbedResult = await call(nc, "embed", EmbedRequest(texts=[texts[1], texts[0], texts[1]]))
        assert again.cached == 3
        assert sample("memoryd_embed_cache_total", {"result": "hit"}) - hits_before == 3
        assert again.vectors[0] == result.vectors[1] and again.vectors[1] == result.vectors[0]

        # retrieve asks with the owner: an owner's cached query never answers another owner
        alice = await call(nc, "embed", EmbedRequest(texts=["is bob leaving"], owner="alice"))
        repeat = await call(nc, "embed", EmbedRequest(texts=["is bob leaving"], owner="alice"))
        mallory = await call(nc, "embed", EmbedRequest(texts=["is bob leaving"], owner="mallory"))
        assert (alice.cached, repeat.cached, mallory.cached) == (0, 1, 0)
        assert mallory.vectors == alice.vectors  # the same text, the same vector

        # 48 concurrent single-text requests, all cache misses: fewer inference calls than requests.
        calls_before = sample("memoryd_embed_batch_texts_count")
        texts_before = sample("memoryd_embed_texts_total", {"path": "query"})
        many = [f"concurrent question number {i} about the garden" for i in range(48)]
        replies = await asyncio.gather(*(call(nc, "embed", EmbedRequest(texts=[t]), timeout=60) for t in many))
        calls = sample("memoryd_embed_batch_texts_count") - calls_before
        assert sample("memoryd_embed_texts_total", {"path": "query"}) - texts_before == 48
        assert 1 <= calls < 48, f"{calls} inference calls for 48 concurrent requests: not batched"
        assert all(r.cached == 0 and len(r.vectors[0]) == 384 for r in replies)
        solo = LocalEmbedder.default().embed([many[7]])[0]
        assert cosine(np.asarray(replies[7].vectors[0]), solo) > 0.9999  # batch mates do not change a vector

        health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.embed")
        assert health.checks["embedder"].startswith(f"ok {SIG}")
        assert "MEMORYD_EMBED_REMOTE_URL not set" in health.checks["embedder"]

        too_many = {"type": "mem.v1.embed_request", "texts": ["x"] * 257}  # the limit is 256 per request
        with pytest.raises(ValidationFailed, match=r"\$\.texts"):
            await call(nc, "embed", too_many)
