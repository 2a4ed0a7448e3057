"""Packed vectors (sign bits to pick candidates, int8 rows to rank them): recall against the exact
cosine ranking on clustered vectors, scores close to the exact cosines, ties by id, the cut's whole
distance group kept, visibility, memories without a vector, and the index's writes (appends that
grow it, deletes, compaction, packing an exact index) keeping each vector with its memory."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest

from services.retrieve.logic import packed_vectors
from services.retrieve.logic.held_vectors import HeldVectors
from services.retrieve.logic.keyword_index import Doc, OwnerIndex, View
from services.retrieve.logic.packed_vectors import PackedVectors

NOW = 10**15
VIEW = View(NOW, 0, None, None, None)


def _around(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    """Vectors near ``centres``, a few near each (as texts about one thing are): a question's nearest
    stand apart from the rest, as they do among sentence embeddings (not so in uniform noise)."""
    noise = 0.7 * rng.standard_normal((n, centres.shape[1]))
    return (centres[rng.integers(0, len(centres), n)] + noise).astype(np.float32)


def _clustered(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    return _around(rng, rng.standard_normal((max(1, n // 10), dim)), n)


def _ids(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(99)
    return rng.integers(0, 2**63, n, dtype=np.uint64), np.zeros(n, dtype=np.uint64)


def test_recall_against_the_exact_ranking_and_scores_close_to_the_cosines() -> None:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((2000, 384))
    x, queries = _around(rng, centres, 20_000), _around(rng, centres, 50)
    exact, packed = HeldVectors.of(list(x), len(x)), PackedVectors.of(list(x), len(x))
    assert exact is not None and packed is not None
    assert packed.nbytes < exact.nbytes / 3
    hi, lo = _ids(len(x))
    seen = np.ones(len(x), dtype=np.bool_)
    recalls, shortfalls = [], []
    for q in queries:
        want, best = exact.nearest(q, 10, seen, hi, lo)
        got, scores = packed.nearest(q, 10, seen, hi, lo)
        recalls.append(len(set(want.tolist()) & set(got.tolist())) / 10)
        cosines = exact.matrix[got] @ (q / np.linalg.norm(q))
        assert scores == pytest.approx(cosines, abs=0.01)
        assert (np.diff(np.round(scores.astype(np.float64), 6)) <= 0).all()  # best first (ties to 6 decimals)
        shortfalls.append(float(best.sum() - cosines.sum()) / 10)  # what a miss costs, per result
    assert np.mean(recalls) >= 0.95 and min(recalls) >= 0.6, recalls
    assert max(shortfalls) < 0.01, shortfalls  # a miss is a near tie of the one it displaced


def test_ties_go_by_id_and_the_cut_keeps_its_whole_distance_group() -> None:
    shared = np.arange(1, 65, dtype=np.float32)
    rng = np.random.default_rng(2)
    x = [shared if i % 3 == 0 else rng.standard_normal(64).astype(np.float32) for i in range(3000)]
    packed = PackedVectors.of(x, len(x))
    assert packed is not None
    hi, lo = _ids(len(x))
    got, scores = packed.nearest(shared, 50, np.ones(len(x), dtype=np.bool_), hi, lo)
    twins = np.arange(0, 3000, 3)
    assert got.tolist() == twins[np.argsort(hi[twins])][:50].tolist()  # 1,000 equal vectors: smallest ids
    assert scores == pytest.approx(np.ones(50), abs=0.01)
    # every row at the cut's sign distance is a candidate, whichever its position
    distance_zero = packed._nearest_signs(shared / np.linalg.norm(shared), np.ones(3000, np.bool_), 3000, 10)
    assert set(twins.tolist()) <= set(distance_zero.tolist())


def test_visibility_rows_without_vectors_and_small_owners() -> None:
    rng = np.random.default_rng(3)
    x: list[np.ndarray | None] = list(_clustered(rng, 2000, 32))
    for i in range(0, 2000, 7):
        x[i] = None
    x[1] = np.zeros(32, dtype=np.float32)
    packed = PackedVectors.of(x, 2100)
    assert packed is not None and len(packed.has) == 2100
    hi, lo = _ids(2000)
    seen = rng.random(2000) < 0.3
    for q in rng.standard_normal((10, 32)).astype(np.float32):
        got, _ = packed.nearest(q, 1000, seen, hi, lo)
        assert all(seen[i] and x[i] is not None and i != 1 for i in got.tolist())
        assert len(got) == sum(1 for i in range(2000) if seen[i] and x[i] is not None and i != 1)
    assert packed.nearest(np.zeros(32, dtype=np.float32), 5, seen, hi, lo)[0].tolist() == []
    assert packed.nearest(np.ones(31, dtype=np.float32), 5, seen, hi, lo)[0].tolist() == []
    packed.put(3, np.ones(31, dtype=np.float32))  # another dimension: not held
    packed.put(4, np.array([np.nan] * 32, dtype=np.float32))
    assert not packed.has[3] and not packed.has[4]


def test_below_the_rerank_depth_every_row_is_ranked_by_its_int8_cosine() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((packed_vectors.RERANK_MIN, 48)).astype(np.float32)
    packed, exact = PackedVectors.of(list(x), len(x)), HeldVectors.of(list(x), len(x))
    assert packed is not None and exact is not None
    hi, lo = _ids(len(x))
    seen = np.ones(len(x), dtype=np.bool_)
    for q in rng.standard_normal((20, 48)).astype(np.float32):
        got, _ = packed.nearest(q, len(x), seen, hi, lo)
        assert sorted(got.tolist()) == list(range(len(x)))
        _, cosines = exact.nearest(q, len(x), seen, hi, lo)
        # place by place, the exact cosine of the packed ranking's memory is the exact ranking's,
        # within the int8 rows' error (a swap only between near ties)
        assert np.abs(exact.matrix[got] @ (q / np.linalg.norm(q)) - cosines).max() < 0.02


def _doc(rnd: random.Random, vector: np.ndarray | None, session: str | None = None) -> Doc:
    return Doc(uuid.UUID(int=rnd.getrandbits(128)), NOW - 1000, ["word"], [1], session_id=session, vector=vector)


def _near_exact(index: OwnerIndex, live: list[Doc], q: np.ndarray, view: View, session: str | None) -> None:
    """The packed ranking holds only visible memories with vectors, each with its own vector's cosine."""
    got = index.nearest(q, 20, view)
    by_id = {str(d.id): d for d in live}
    visible = [d for d in live if d.vector is not None and (session is None or d.session_id == session)]
    assert len(got) == min(20, len(visible))
    unit_q = q / np.linalg.norm(q)
    for memory, score in got:
        v = by_id[memory].vector
        assert v is not None and (session is None or by_id[memory].session_id == session)
        assert score == pytest.approx(float(v @ unit_q / np.linalg.norm(v)), abs=0.01)


def test_an_index_s_writes_keep_each_packed_vector_with_its_memory() -> None:
    rnd = random.Random(5)
    rng = np.random.default_rng(5)

    def vector() -> np.ndarray | None:
        return None if rnd.random() < 0.1 else rng.standard_normal(16).astype(np.float32)

    live = [_doc(rnd, vector(), rnd.choice(["s1", "s2"])) for _ in range(300)]
    index = OwnerIndex(live, packed=True)
    assert isinstance(index.vectors, PackedVectors)
    for step in range(400):  # appends past the room (it grows), deletes, compactions
        if rnd.random() < 0.6:
            doc = _doc(rnd, vector(), "s1")
            index.append(doc)
            live.append(doc)
        else:
            assert index.delete(live.pop(rnd.randrange(len(live))).id)
        if step % 50 == 49:
            index.compact()
        if step % 10 == 0:
            q = rng.standard_normal(16).astype(np.float32)
            _near_exact(index, live, q, VIEW, None)
            _near_exact(index, live, q, View(NOW, 0, None, "s1", None), "s1")


def test_an_exact_index_packed_ranks_as_one_built_packed() -> None:
    rnd = random.Random(6)
    rng = np.random.default_rng(6)
    docs = [_doc(rnd, rng.standard_normal(64).astype(np.float32)) for _ in range(1500)]
    exact, packed = OwnerIndex(docs), OwnerIndex(docs, packed=True)
    assert isinstance(exact.vectors, HeldVectors)
    exact.pack_vectors()
    assert isinstance(exact.vectors, PackedVectors)
    for q in rng.standard_normal((10, 64)).astype(np.float32):
        assert exact.nearest(q, 10, VIEW) == packed.nearest(q, 10, VIEW)
