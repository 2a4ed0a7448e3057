"""``bulk_pairs`` (one partitioned pass) finds exactly the pairs of ``exact_pairs`` (a kNN per
memory in numpy) on clustered data, with memory bounded by its blocks."""

from __future__ import annotations

import uuid

import numpy as np
from numpy.typing import NDArray

from shared.vectors.bulk_pairs import bulk_pairs, cluster_count, loaded_unit_rows, train_centroids, unit_rows
from shared.vectors.common import exact_pairs
from shared.vectors.pgvector import PackedIds

DIM = 48


def corpus(
    seed: int, groups: int = 150, singles: int = 1500, spread: float = 0.45
) -> tuple[list[str], NDArray[np.float32]]:
    """Near-duplicate groups of 2-5 (``spread`` 0.45: pairwise cosine ~0.8-0.99) among random singles."""
    rng = np.random.default_rng(seed)
    centers = unit_rows(rng.standard_normal((groups, DIM)).astype(np.float32))
    rows = [
        c + eps * rng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
        for c in centers
        for eps in rng.uniform(0.1, spread, int(rng.integers(2, 6)))
    ]
    rows += list(rng.standard_normal((singles, DIM)).astype(np.float32))
    order = rng.permutation(len(rows))
    matrix = unit_rows(np.stack(rows)[order])
    return [f"m{i:05d}" for i in range(len(matrix))], matrix


def loader(matrix: NDArray[np.float32], seen: list[int]):  # type: ignore[no-untyped-def]
    async def load(rows: NDArray[np.intp]) -> NDArray[np.float32]:
        seen.append(len(rows))
        return matrix[rows]

    return load


async def test_partitioned_pass_equals_exact_knn_pairs() -> None:
    ids, matrix = corpus(3, spread=0.25)
    probe = np.ones(len(ids), dtype=np.bool_)
    assert cluster_count(len(ids), cluster_size=300) > 3  # really partitioned (3 clusters per vector)
    seen: list[int] = []
    got = await bulk_pairs(
        ids, probe, loader(matrix, seen), min_score=0.85, per_memory=2, limit=10_000, cluster_size=300
    )
    want = exact_pairs(ids, matrix, probe, min_score=0.85, per_memory=2, limit=10_000)
    assert len(want) > 100
    assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in want]
    assert np.allclose([s for *_, s in got], [s for *_, s in want], atol=1e-5)
    assert max(seen) <= 2048  # pages of 1024 while sampling and assigning, then a cluster at a time
    assert max(seen[-10:]) < len(ids) / 2
    # looser groups straddle clusters more often: a pair can be missed (as by an ANN index), never invented
    ids, matrix = corpus(3, spread=0.7)
    got = await bulk_pairs(ids, probe, loader(matrix, []), min_score=0.85, per_memory=2, limit=10_000, cluster_size=300)
    want = exact_pairs(ids, matrix, probe, min_score=0.85, per_memory=2, limit=10_000)
    found, truth = {(a, b) for a, b, _ in got}, {(a, b) for a, b, _ in want}
    assert found <= truth and len(found) >= 0.99 * len(truth)


async def test_probes_limit_and_oversized_clusters() -> None:
    ids, matrix = corpus(4, groups=60, singles=400)
    probe = np.zeros(len(ids), dtype=np.bool_)
    probe[::3] = True  # an incremental run: only some memories probe, partners may be any
    want = exact_pairs(ids, matrix, probe, min_score=0.8, per_memory=3, limit=25)
    seen: list[int] = []
    got = await bulk_pairs(
        ids, probe, loader(matrix, seen), min_score=0.8, per_memory=3, limit=25, cluster_size=200, max_block=64
    )
    assert len(want) == 25
    assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in want]
    assert max(seen) <= max(64, 40 * cluster_count(len(ids), cluster_size=200), 4096)
    single = await bulk_pairs(ids[:2], np.ones(2, np.bool_), loader(matrix, []), min_score=-1, per_memory=1, limit=5)
    assert [(a, b) for a, b, _ in single] == [(ids[0], ids[1])]
    assert (
        await bulk_pairs(ids, np.zeros(len(ids), np.bool_), loader(matrix, []), min_score=0, per_memory=1, limit=5)
        == []
    )


def test_centroids_are_deterministic_unit_vectors() -> None:
    _, matrix = corpus(5, groups=20, singles=200)
    first, second = train_centroids(matrix, 8), train_centroids(matrix, 8)
    assert np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)


def test_a_loaded_block_is_scaled_where_it_lies_and_a_borrowed_one_is_copied() -> None:
    rng = np.random.default_rng(2)
    owned = rng.standard_normal((6, DIM)).astype(np.float32)
    owned[3] = 0  # a zero row stays zero
    want = unit_rows(owned.copy())
    assert loaded_unit_rows(owned) is owned and np.allclose(owned, want)
    shared = rng.standard_normal((6, DIM)).astype(np.float32)
    before = shared.copy()
    view = shared[1:4]  # the loader's caller still holds the rows: never scaled in place
    out = loaded_unit_rows(view)
    assert out is not view and np.array_equal(shared, before)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_packed_ids_name_rows_and_pack_them_in_the_order_asked() -> None:
    """pgvector keeps a large owner's ids as 16 bytes each (``uuid_send`` order) and names a row
    only when it pairs."""
    ids = sorted(uuid.UUID(int=(i * 2654435761) << 64 | i) for i in range(5))
    packed = PackedIds(b"".join(u.bytes for u in ids))
    assert len(packed) == 5 and [packed[r] for r in range(5)] == [str(u) for u in ids]
    assert packed.packed(np.array([3, 0], dtype=np.intp)) == ids[3].bytes + ids[0].bytes
    assert len(PackedIds(None)) == 0  # an owner with no vectors
