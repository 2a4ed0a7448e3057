"""Vectors held beside the in-memory keyword index: exact cosine order against a brute-force
reference (ties by id), visibility, memories without a vector, and the index's writes (appends
that grow it, deletes, compaction) keeping each vector with its memory."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest

from services.retrieve.logic.held_vectors import HeldVectors, decode_sent, unit
from services.retrieve.logic.keyword_index import Doc, OwnerIndex, View

NOW = 10**15
VIEW = View(NOW, 0, None, None, None)


def _doc(rnd: random.Random, vector: list[float] | None, session: str | None = None) -> Doc:
    v = None if vector is None else np.array(vector, dtype=np.float32)
    return Doc(uuid.UUID(int=rnd.getrandbits(128)), NOW - 1000, ["word"], [1], session_id=session, vector=v)


def _reference(docs: list[Doc], query: list[float], limit: int, session: str | None = None) -> list[tuple[str, float]]:
    q = np.array(query, dtype=np.float64)
    q /= np.linalg.norm(q)
    scored = []
    for d in docs:
        if d.vector is None or (session is not None and d.session_id != session):
            continue
        v = np.asarray(d.vector, dtype=np.float64)
        scored.append(
            (-round(float(v @ q / np.linalg.norm(v)), 6), d.id.int, str(d.id), float(v @ q / np.linalg.norm(v)))
        )
    return [(text, score) for _, _, text, score in sorted(scored)[:limit]]


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [m for m, _ in got] == [m for m, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


def test_exact_order_ties_by_id_and_memories_without_vectors() -> None:
    rnd = random.Random(1)
    shared = [1.0, 2.0, 3.0, 4.0]  # several memories share it: they tie, and go by id
    docs = [
        _doc(rnd, None if i % 7 == 0 else shared if i % 5 == 0 else [rnd.gauss(0, 1) for _ in range(4)])
        for i in range(300)
    ]
    index = OwnerIndex(docs)
    for query in ([1.0, 2.0, 3.0, 4.1], [rnd.gauss(0, 1) for _ in range(4)], [-1.0, 0.5, 0.0, 2.0]):
        for limit in (1, 10, 50, 1000):
            _same(index.nearest(np.array(query, dtype=np.float32), limit, VIEW), _reference(docs, query, limit))


def test_visibility_and_writes_keep_each_vector_with_its_memory() -> None:
    rnd = random.Random(2)
    docs = [_doc(rnd, [rnd.gauss(0, 1) for _ in range(6)], rnd.choice(["s1", "s2"])) for _ in range(100)]
    index = OwnerIndex(docs)
    live = list(docs)
    for step in range(300):  # appends past the room (it grows), deletes, compactions
        if rnd.random() < 0.6:
            doc = _doc(rnd, None if rnd.random() < 0.1 else [rnd.gauss(0, 1) for _ in range(6)], "s1")
            index.append(doc)
            live.append(doc)
        else:
            gone = live.pop(rnd.randrange(len(live)))
            assert index.delete(gone.id)
        if step % 50 == 49:
            index.compact()
        if step % 10 == 0:
            query = [rnd.gauss(0, 1) for _ in range(6)]
            q = np.array(query, dtype=np.float32)
            _same(index.nearest(q, 20, VIEW), _reference(live, query, 20))
            view = View(NOW, 0, None, "s1", None)
            _same(index.nearest(q, 20, view), _reference(live, query, 20, session="s1"))


def test_an_index_without_vectors_and_one_that_drops_them_rank_nothing() -> None:
    rnd = random.Random(3)
    index = OwnerIndex([_doc(rnd, None) for _ in range(5)])
    assert index.vectors is None and index.nearest(np.ones(4, dtype=np.float32), 5, VIEW) == []
    index.append(_doc(rnd, [1.0, 0.0, 0.0, 0.0]))  # the first vector makes the rows
    assert [s for _, s in index.nearest(np.array([1, 0, 0, 0], dtype=np.float32), 5, VIEW)] == pytest.approx([1.0])
    index.drop_vectors()
    assert index.nearest(np.ones(4, dtype=np.float32), 5, VIEW) == []


def test_rows_of_another_dimension_zero_and_non_finite_vectors_are_not_held() -> None:
    held = HeldVectors(3, 4)
    held.put(0, np.array([1, 0, 0], dtype=np.float32))
    held.put(1, np.array([1, 0, 0, 0], dtype=np.float32))
    held.put(2, np.zeros(3, dtype=np.float32))
    held.put(3, np.array([np.nan, 1, 0], dtype=np.float32))
    assert held.has.tolist() == [True, False, False, False]
    assert unit([0, 0]) is None
    hi, lo = np.arange(4, dtype=np.uint64), np.zeros(4, dtype=np.uint64)
    chosen, scores = held.nearest(np.array([1, 1, 0], dtype=np.float32), 10, np.ones(4, dtype=np.bool_), hi, lo)
    assert chosen.tolist() == [0] and scores.tolist() == pytest.approx([2**-0.5])


def test_vector_send_forms_decode_to_rows() -> None:
    rows = np.array([[1.5, -2.0, 0.25], [0.0, 3.0, -1.0]], dtype=np.float32)
    header = (3).to_bytes(2, "big") + b"\0\0"
    blob = b"".join(header + r.astype(">f4").tobytes() for r in rows)
    assert decode_sent(blob).tolist() == rows.tolist()
    assert decode_sent(None, 3).shape == (0, 3)
