"""Similar pairs of one owner's vectors in one partitioned pass, instead of a kNN probe per memory.

The sleep conflict phase wants, for every probing memory, its ``per_memory`` nearest
memories of the same owner at cosine >= ``min_score``. Probing an HNSW index once per
memory costs a graph walk each (~1.5-8 ms at 100k memories); this does one pass:

1. spherical k-means on an evenly spaced sample of the owner's vectors gives
   ``k ~ n * assign / cluster_size`` centroids (fixed seed: the same vectors give the same
   partition);
2. every vector joins its ``assign`` nearest clusters (vectors streamed a page at a time);
3. within each cluster that holds a probe, the probes are compared exactly with every
   member (a matrix product), and each probe keeps its best ``per_memory`` partners at or
   above ``min_score`` over all of its clusters.

A pair is found when its two memories share a cluster, which near-duplicates (the pairs a
conflict threshold keeps) nearly always do; when ``k`` is 1 (small owners) the answer is
exact. Scores are exact cosines. Vectors are loaded through the adapter's ``Loader`` a page
or a cluster at a time, so memory is bounded by ``max_block`` vectors, not by the owner's
size (a cluster larger than ``max_block`` is compared block against block).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .common import best_pairs, merge_pairs
from .port import Pair

#: ``vectors_of(ids)`` -> their vectors, one row per id in the order asked.
Loader = Callable[[Sequence[str]], Awaitable[NDArray[np.float32]]]

CLUSTER_SIZE = 1000  # mean members per cluster
ASSIGN = 3  # clusters each vector joins
SAMPLE_PER_CLUSTER = 16  # k-means training rows per centroid
ITERATIONS = 10
PAGE = 2048  # vectors per load while sampling and assigning
MAX_BLOCK = 8192  # vectors of one cluster held at once
_ROWS = 1024  # probe rows per similarity block (1024 x MAX_BLOCK floats: 32 MB at most)


def cluster_count(n: int, cluster_size: int = CLUSTER_SIZE, assign: int = ASSIGN) -> int:
    """How many clusters ``n`` vectors get (1: a single exact comparison)."""
    return max(1, round(n * assign / max(1, cluster_size)))


def unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows scaled to length 1 (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def train_centroids(sample: NDArray[np.float32], k: int, iterations: int = ITERATIONS) -> NDArray[np.float32]:
    """Spherical k-means: ``k`` unit centroids of the (unit) ``sample`` rows, deterministic."""
    rng = np.random.default_rng(0)
    k = min(k, len(sample))
    centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(iterations):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        counts = np.bincount(nearest, minlength=k)
        empty = counts == 0
        if empty.any():  # an empty cluster restarts on a random sample row
            sums[empty] = sample[rng.choice(len(sample), int(empty.sum()))]
        centroids = unit_rows(sums)
    return centroids


def nearest_clusters(block: NDArray[np.float32], centroids: NDArray[np.float32], assign: int) -> NDArray[np.int32]:
    """Per row of ``block``, the indexes of its ``assign`` nearest centroids."""
    sims = block @ centroids.T
    m = min(assign, centroids.shape[0])
    if m == centroids.shape[0]:
        return np.broadcast_to(np.arange(m, dtype=np.int32), (len(block), m)).copy()
    return np.argpartition(-sims, m - 1, axis=1)[:, :m].astype(np.int32)


class BestPartners:
    """Per probe row, its best ``per_memory`` partner rows at or above ``min_score``."""

    def __init__(self, per_memory: int, min_score: float) -> None:
        self.per_memory = per_memory
        self.min_score = min_score
        self.found: dict[int, dict[int, float]] = {}

    def compare(
        self, rows: NDArray[Any], probes: NDArray[np.float32], cols: NDArray[Any], members: NDArray[np.float32]
    ) -> None:
        """Offer every (probe row, member row) similarity at or above ``min_score``; a row never
        partners itself. ``cols`` are sorted. Rows with more than ``per_memory`` such partners
        offer only their best ``per_memory``."""
        for start in range(0, len(rows), _ROWS):
            part = rows[start : start + _ROWS]
            sims = probes[start : start + _ROWS] @ members.T
            at = np.minimum(np.searchsorted(cols, part), len(cols) - 1)
            mine = cols[at] == part
            sims[np.flatnonzero(mine), at[mine]] = -np.inf
            hits = sims >= self.min_score
            counts = hits.sum(axis=1)
            crowded = np.flatnonzero(counts > self.per_memory)
            if crowded.size:
                top = np.argpartition(-sims[crowded], self.per_memory - 1, axis=1)[:, : self.per_memory]
                hits[crowded] = False
                hits[crowded[:, None], top] = sims[crowded[:, None], top] >= self.min_score
            for r, c in zip(*np.nonzero(hits), strict=True):
                self.offer(int(part[r]), int(cols[c]), float(sims[r, c]))

    def offer(self, row: int, partner: int, score: float) -> None:
        mine = self.found.setdefault(row, {})
        if score <= mine.get(partner, -np.inf):
            return
        mine[partner] = score
        if len(mine) > self.per_memory:
            del mine[min(mine, key=lambda p: (mine[p], -p))]


async def bulk_pairs(
    ids: Sequence[str],
    probe: NDArray[np.bool_],
    vectors_of: Loader,
    *,
    min_score: float,
    per_memory: int,
    limit: int,
    cluster_size: int = CLUSTER_SIZE,
    assign: int = ASSIGN,
    max_block: int = MAX_BLOCK,
) -> list[Pair]:
    """Pairs ``(a, b, cosine)``, ``a < b``, best first, at most ``limit``: for each row of
    ``ids`` where ``probe`` is true, its ``per_memory`` nearest at cosine >= ``min_score``
    (partners may be any row). Same contract as ``common.exact_pairs``."""
    n = len(ids)
    if n < 2 or per_memory <= 0 or limit <= 0 or not probe.any():
        return []
    k = cluster_count(n, cluster_size, assign)
    if k == 1:
        member_of = np.zeros((n, 1), dtype=np.int32)
    else:
        sample_rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE_PER_CLUSTER * k)).astype(np.int64))
        chosen = [ids[i] for i in sample_rows]
        sample = np.concatenate(
            [unit_rows(await vectors_of(chosen[s : s + PAGE])) for s in range(0, len(chosen), PAGE)]
        )
        centroids = await asyncio.to_thread(train_centroids, sample, k)
        del sample
        member_of = np.empty((n, min(assign, len(centroids))), dtype=np.int32)
        for start in range(0, n, PAGE):
            block = unit_rows(await vectors_of(ids[start : start + PAGE]))
            member_of[start : start + PAGE] = nearest_clusters(block, centroids, assign)
    flat = member_of.ravel()
    order = np.argsort(flat, kind="stable")
    rows_by_cluster = order // member_of.shape[1]
    bounds = np.searchsorted(flat[order], np.arange(int(flat.max()) + 2))
    best = BestPartners(per_memory, min_score)
    for c in range(len(bounds) - 1):
        members = np.unique(rows_by_cluster[bounds[c] : bounds[c + 1]])
        if len(members) >= 2 and probe[members].any():
            await _cluster(best, ids, probe, vectors_of, members, max_block)
    pairs = merge_pairs((ids[r], ids[p], s) for r, partners in best.found.items() for p, s in partners.items())
    return best_pairs(pairs.items(), limit)


async def _cluster(
    best: BestPartners,
    ids: Sequence[str],
    probe: NDArray[np.bool_],
    vectors_of: Loader,
    members: NDArray[Any],
    max_block: int,
) -> None:
    """Compare the probes of one cluster with all of its members, ``max_block`` rows at a time."""
    blocks = [members[s : s + max_block] for s in range(0, len(members), max_block)]
    for i, rows_i in enumerate(blocks):
        vec_i = unit_rows(await vectors_of([ids[r] for r in rows_i]))
        for j in range(i, len(blocks)):
            rows_j, vec_j = (
                (rows_i, vec_i) if j == i else (blocks[j], unit_rows(await vectors_of([ids[r] for r in blocks[j]])))
            )
            await asyncio.to_thread(_both_ways, best, probe, rows_i, vec_i, rows_j, vec_j, j == i)


def _both_ways(
    best: BestPartners,
    probe: NDArray[np.bool_],
    rows_i: NDArray[Any],
    vec_i: NDArray[np.float32],
    rows_j: NDArray[Any],
    vec_j: NDArray[np.float32],
    same: bool,
) -> None:
    mask_i = probe[rows_i]
    if mask_i.any():
        best.compare(rows_i[mask_i], vec_i[mask_i], rows_j, vec_j)
    mask_j = probe[rows_j]
    if not same and mask_j.any():
        best.compare(rows_j[mask_j], vec_j[mask_j], rows_i, vec_i)
