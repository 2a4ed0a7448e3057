"""Half-precision storage (a ``:half`` signature) on the real PostgreSQL: what it keeps and saves.

- recall: on 2,000 real-model embeddings (the local ONNX model over the latency benchmark's
  synthetic memories), the exact top-10 of halfvec storage matches full precision's (>= 0.98 on
  average, over the benchmark's questions);
- storage: the halfvec rows are at least 1.9x smaller than the full ones, the halfvec HNSW
  index smaller than the vector one;
- bad input: a vector halfvec cannot hold is a ``ValidationFailed`` naming the field, never a
  database error.
"""

from __future__ import annotations

import uuid

import asyncpg
import numpy as np
import pytest

from bench.synth import questions, sentences
from memoryd.errors import ValidationFailed
from services.embed.adapters import LocalEmbedder
from shared.vectors import pgvector_sql as sql
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorItem, VectorQuery
from shared.vectors.signature import stored_signature

from .world import World

N = 2000


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, np.ndarray]:
    """Real embeddings: ``N`` synthetic memories and 50 questions about them."""
    model = LocalEmbedder.default()
    texts = list(sentences(N))
    vectors = np.vstack([model.embed(texts[i : i + 64]) for i in range(0, N, 64)])
    return vectors, model.embed(questions(50))


async def _both(pool: asyncpg.Pool, vectors: np.ndarray) -> tuple[PgVectorStore, str, str, str, list[str]]:
    """The same vectors under a full and a ``:half`` signature, for one owner."""
    store = PgVectorStore(pool, exact_max_rows=10 * N)  # exact search: the truth of each storage
    full = f"test:{uuid.uuid4().hex[:8]}:{vectors.shape[1]}"
    half = stored_signature(f"test:{uuid.uuid4().hex[:8]}:{vectors.shape[1]}", "half")
    owner = f"o-{uuid.uuid4().hex[:8]}"
    world = World(pool, store, full)
    ids = [world.add(owner, v) for v in vectors]
    assert await world.flush() == len(ids)
    assert await store.upsert(half, [world.rows[i].item() for i in ids]) == len(ids)
    return store, full, half, owner, ids


async def test_half_storage_keeps_the_exact_neighbours_of_real_embeddings(
    pool: asyncpg.Pool, corpus: tuple[np.ndarray, np.ndarray]
) -> None:
    vectors, queries = corpus
    store, full, half, owner, _ = await _both(pool, vectors)
    overlap = []
    for q in queries:
        query = VectorQuery(owner=owner, vector=q, limit=10)
        want = await store.search_exact(full, query, q, 10)
        got = await store.search_exact(half, query, q, 10)
        assert len(want) == len(got) == 10
        overlap.append(len({h.memory_id for h in want} & {h.memory_id for h in got}) / 10)
        # scores differ by float16 rounding only
        assert got[0].score == pytest.approx(want[0].score, abs=2e-3)
    assert float(np.mean(overlap)) >= 0.98, overlap


async def test_half_rows_and_index_are_smaller(pool: asyncpg.Pool, corpus: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, _ = corpus
    store, full, half, _, _ = await _both(pool, vectors[:1000])
    dim = vectors.shape[1]
    sizes = await pool.fetchrow(
        "SELECT sum(pg_column_size(embedding)) FILTER (WHERE signature = $1) AS full,"
        " sum(pg_column_size(embedding_half)) FILTER (WHERE signature = $2) AS half,"
        " count(embedding) FILTER (WHERE signature = $2) AS half_with_full"
        " FROM memory_embeddings WHERE signature IN ($1, $2)",
        full,
        half,
    )
    assert sizes["half_with_full"] == 0  # a half row holds no full-precision copy
    assert sizes["full"] / sizes["half"] >= 1.9, dict(sizes)  # 384-d: 1544 against 776 bytes a vector
    await store.ensure(full, dim)
    await store.ensure(half, dim)
    size = "SELECT pg_relation_size($1::regclass)"
    full_index = await pool.fetchval(size, sql.index_name(full, dim, False))
    half_index = await pool.fetchval(size, sql.index_name(half, dim, True))
    assert half_index < 0.7 * full_index, (full_index, half_index)  # measured 1000 x 384-d: 1.74x smaller
    assert "storage: halfvec" in (await store.status(half)).detail
    assert "storage: vector" in (await store.status(full)).detail


async def test_a_vector_halfvec_cannot_hold_is_refused(pool: asyncpg.Pool) -> None:
    store = PgVectorStore(pool)
    half = stored_signature(f"test:{uuid.uuid4().hex[:8]}:4", "half")
    world = World(pool, store, half)
    mid = world.add("o-half", np.array([1, 0, 0, 0], dtype=np.float32))
    await world.flush()
    for bad, why in (([1e5, 0, 0, 0], "range of halfvec"), ([1e-9, 1e-9, 0, 0], "underflows to 0")):
        with pytest.raises(ValidationFailed, match=why) as err:
            await store.upsert(half, [VectorItem(memory_id=mid, owner="o-half", vector=bad)])
        assert "items[0].vector" in err.value.description
        with pytest.raises(ValidationFailed, match=why):
            await store.search(half, VectorQuery(owner="o-half", vector=bad))
    # the same values are fine at full precision (own signature, full storage)
    full = f"test:{uuid.uuid4().hex[:8]}:4"
    assert await store.upsert(full, [VectorItem(memory_id=mid, owner="o-half", vector=[1e5, 0, 0, 0])]) == 1
    hits = await store.search(half, VectorQuery(owner="o-half", vector=[1, 0.001, 0, 0]))
    assert [h.memory_id for h in hits] == [mid] and hits[0].score == pytest.approx(1.0, abs=1e-3)
