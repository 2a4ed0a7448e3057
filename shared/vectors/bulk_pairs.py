"""Similar pairs of one owner's vectors in one partitioned pass, instead of a kNN probe per memory.

For the sleep conflict phase: every probing memory's ``per_memory`` nearest memories of the same
owner at cosine >= ``min_score``. Spherical k-means on a sample partitions the vectors, each probe
looks into its ``assign`` nearest clusters (an inverted file), and each cluster's probes are
compared exactly with its members (see ``bulk_pairs``). Scores are exact cosines; the partition is
deterministic (fixed seed) and with one cluster (small owners) the answer is exact. Vectors are
loaded a page or a cluster at a time through the adapter's ``Loader``, so memory is bounded by
``max_block`` vectors, not the owner's size; ``ids`` is read only for the pairs found, so an
adapter may keep them packed. The matrix products are meant to run on one BLAS thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .common import best_pairs, merge_pairs
from .port import Pair

#: ``vectors_of(rows)`` -> the vectors of the memories at those positions of ``ids``, in that order.
Loader = Callable[[NDArray[np.intp]], Awaitable[NDArray[np.float32]]]


class Ids(Protocol):
    """The owner's memory ids by row: a list of ``str``, or an adapter's packed column."""

    def __len__(self) -> int: ...

    def __getitem__(self, row: int) -> str: ...


CLUSTER_SIZE = 1000  # mean members per cluster
ASSIGN = 3  # clusters each vector joins
SAMPLE_PER_CLUSTER = 16  # k-means training rows per centroid
ITERATIONS = 10
PAGE = 1024  # vectors per load while sampling and assigning
MAX_BLOCK = 8192  # vectors of one cluster (probes and members) held at once
_ROWS = 256  # probe rows per similarity block (256 x MAX_BLOCK floats: 8 MB at most)


@functools.cache
def _worker() -> ThreadPoolExecutor:
    """The one thread of the process that runs the passes' numpy work: concurrent passes take
    turns (each is CPU-bound anyway), and their temporaries come from one malloc arena
    instead of one per pool thread."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="bulk-pairs")


async def _off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_worker(), fn, *args)


def cluster_count(n: int, cluster_size: int = CLUSTER_SIZE, assign: int = ASSIGN) -> int:
    """How many clusters ``n`` vectors get (1: a single exact comparison)."""
    return max(1, round(n * assign / max(1, cluster_size)))


def unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows scaled to length 1 (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def loaded_unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """``unit_rows`` of a block the loader just returned, scaled where it lies when the block is
    its own float32 array (a loaded cluster is the largest thing the pass holds: no second copy)."""
    if matrix.dtype != np.float32 or matrix.base is not None or not matrix.flags.writeable:
        return unit_rows(matrix)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1
    matrix /= norms
    return matrix


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


def _grouped(labels: NDArray[np.int32], k: int) -> list[NDArray[np.intp]]:
    """Per cluster ``0..k-1``, the sorted rows whose ``labels`` (n x m) name it."""
    flat = labels.reshape(len(labels), -1)
    order = np.argsort(flat.ravel(), kind="stable")
    rows = order // flat.shape[1]
    bounds = np.searchsorted(flat.ravel()[order], np.arange(k + 1))
    return [np.unique(rows[bounds[c] : bounds[c + 1]]) for c in range(k)]


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
    ids: Ids,
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
    (partners may be any row). Same contract as ``common.exact_pairs``.

    Spherical k-means on an evenly spaced sample gives ``k ~ n * assign / cluster_size``
    centroids; every vector is a member of its nearest cluster and a probe looks into its
    ``assign`` nearest (an inverted file with ``nprobe = assign``); per cluster, its probes are
    compared exactly with its members in one matrix product (block against block when larger
    than ``max_block``). A pair is found when one memory's cluster is among the other's
    ``assign`` nearest, which near-duplicates nearly always are.
    """
    n = len(ids)
    if n < 2 or per_memory <= 0 or limit <= 0 or not probe.any():
        return []
    k = cluster_count(n, cluster_size, assign)
    if k == 1:
        near = np.zeros((n, 1), dtype=np.int32)
    else:
        sample_rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE_PER_CLUSTER * k)).astype(np.intp))
        sample = np.concatenate(
            [loaded_unit_rows(await vectors_of(sample_rows[s : s + PAGE])) for s in range(0, len(sample_rows), PAGE)]
        )
        centroids = await _off_loop(train_centroids, sample, k)
        k = len(centroids)
        del sample
        near = np.empty((n, min(assign, k)), dtype=np.int32)
        pages = [np.arange(s, min(n, s + PAGE), dtype=np.intp) for s in range(0, n, PAGE)]
        async for i, block in _prefetched(vectors_of, pages):
            got = await _off_loop(nearest_clusters, loaded_unit_rows(block), centroids, assign)
            near[i * PAGE : i * PAGE + len(block)] = got
    cells = [_probing(m, probe) for m in _grouped(near, k) if len(m) >= 2 and probe[m].any()]
    del near
    best = BestPartners(per_memory, min_score)
    small = [(p, m, m) for p, m in cells if len(m) <= max_block]
    async for i, vec in _prefetched(vectors_of, [both for _, _, both in small]):
        await _off_loop(_compare_cell, best, *small[i], loaded_unit_rows(vec))
    for probes, members in cells:
        if len(members) > max_block:
            await _large_cell(best, vectors_of, probes, members, max_block)
    pairs = merge_pairs((ids[r], ids[p], s) for r, partners in best.found.items() for p, s in partners.items())
    return best_pairs(pairs.items(), limit)


def _probing(members: NDArray[np.intp], probe: NDArray[np.bool_]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """A cluster's probing rows and its members: the same array when every member probes (a
    first run), not a copy of it."""
    mine = probe[members]
    return (members if mine.all() else members[mine]), members


def _compare_cell(
    best: BestPartners,
    probes: NDArray[np.intp],
    members: NDArray[np.intp],
    both: NDArray[np.intp],
    vectors: NDArray[np.float32],
) -> None:
    """One cluster: its probes against its members, ``vectors`` the rows of ``both`` (sorted).
    Rows that are all of ``both`` (every member probes, as on a first run) are ``vectors``
    itself, not a copy."""

    def rows_of(chosen: NDArray[np.intp]) -> NDArray[np.float32]:
        return vectors if len(chosen) == len(both) else vectors[np.searchsorted(both, chosen)]

    best.compare(probes, rows_of(probes), members, rows_of(members))


async def _large_cell(
    best: BestPartners,
    vectors_of: Loader,
    probes: NDArray[np.intp],
    members: NDArray[np.intp],
    max_block: int,
) -> None:
    """A cluster too large to hold at once: probe blocks against member blocks, each at most
    ``max_block // 2`` rows."""
    half = max(1, max_block // 2)
    member_blocks = [members[s : s + half] for s in range(0, len(members), half)]
    for s in range(0, len(probes), half):
        rows = probes[s : s + half]
        vec = loaded_unit_rows(await vectors_of(rows))
        async for j, other in _prefetched(vectors_of, member_blocks):
            await _off_loop(best.compare, rows, vec, member_blocks[j], loaded_unit_rows(other))


async def _prefetched(
    vectors_of: Loader, batches: Sequence[NDArray[np.intp]]
) -> AsyncIterator[tuple[int, NDArray[np.float32]]]:
    """``(index, vectors)`` of each batch in order, the next batch loading while the caller
    works on this one (PostgreSQL and the comparison overlap; two batches held at most)."""
    pending = asyncio.ensure_future(vectors_of(batches[0])) if batches else None
    try:
        for i in range(len(batches)):
            assert pending is not None
            vec = await pending
            pending = asyncio.ensure_future(vectors_of(batches[i + 1])) if i + 1 < len(batches) else None
            yield i, vec
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
