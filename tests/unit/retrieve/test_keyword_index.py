"""The in-memory keyword index: the same top k and scores as BM25 computed memory by memory."""

from __future__ import annotations

import math
import random
import uuid

import pytest

from services.retrieve.logic.keyword_index import Doc, Hit, OwnerIndex, brute_force
from services.retrieve.logic.bm25 import idf


def _id(i: int) -> uuid.UUID:
    return uuid.UUID(int=i)


def _doc(i: int, created: int, **tf: int) -> Doc:
    return Doc(_id(i), created, list(tf), list(tf.values()))


def _same(got: list[Hit], want: list[Hit]) -> None:
    assert [h.id for h in got] == [h.id for h in want]
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g.score, w.score, rel_tol=1e-12)


CORPUS = [
    _doc(1, 100, cat=1, sat=1),
    _doc(2, 200, cat=2, mat=1),
    _doc(3, 300, dog=1),
    _doc(4, 150, cat=1, sat=1),  # ties memory 1, newer: ranks first
    _doc(5, 150, cat=1, sat=1),  # ties memory 4 at the same time: the smaller id first
    _doc(6, 50, mat=3),
]


def test_scores_and_tie_order_by_hand() -> None:
    index = OwnerIndex(CORPUS)
    hits, occurrences = index.search(["cat", "sat", "fish"], 10)
    n, k1 = 6, 1.2
    pair = idf(n, 4) + idf(n, 3)  # cat in 4 memories, sat in 3; tf 1 weighs idf exactly
    two = idf(n, 4) * 2 * (k1 + 1) / (2 + k1)
    assert [h.id for h in hits] == [_id(4), _id(5), _id(1), _id(2)]
    assert [h.score for h in hits] == pytest.approx([pair, pair, pair, two], rel=1e-12)
    assert occurrences == 2
    _same(hits, brute_force(CORPUS, ["cat", "sat", "fish"], 10))


def test_limit_cuts_inside_a_tie_group_by_date_then_id() -> None:
    hits, _ = OwnerIndex(CORPUS).search(["cat", "sat"], 2)
    assert [h.id for h in hits] == [_id(4), _id(5)]
    hits, _ = OwnerIndex(CORPUS).search(["cat", "sat"], 1)
    assert [h.id for h in hits] == [_id(4)]


def test_no_match_and_unknown_lexemes() -> None:
    assert OwnerIndex(CORPUS).search(["zebra"], 10) == ([], 0)
    assert OwnerIndex(CORPUS).search([], 10) == ([], 0)
    assert OwnerIndex([]).search(["cat"], 10) == ([], 0)


def test_ids_sort_as_uuids_across_both_halves() -> None:
    # same score and date: PostgreSQL orders uuids bytewise, so the high half decides first
    docs = [Doc(uuid.UUID(int=(1 << 64) + 0), 5, ["a"], [1]), Doc(uuid.UUID(int=(0 << 64) + 9), 5, ["a"], [1])]
    hits, _ = OwnerIndex(docs).search(["a"], 2)
    assert [h.id.int for h in hits] == [9, 1 << 64]


def _random_corpus(rnd: random.Random, n: int) -> list[Doc]:
    words = [f"w{i}" for i in range(30)]
    docs = []
    for _ in range(n):
        held = rnd.sample(words[: rnd.choice((5, 30))], rnd.randint(1, 5))
        counts = [rnd.choice((1, 1, 2, 3)) for _ in held]
        # few distinct dates and counts: many ties
        docs.append(Doc(uuid.UUID(int=rnd.getrandbits(128)), rnd.randint(0, 5), held, counts))
    return docs


@pytest.mark.parametrize("seed", range(20))
def test_random_corpora_match_brute_force(seed: int) -> None:
    rnd = random.Random(seed)
    docs = _random_corpus(rnd, rnd.randint(1, 300))
    index = OwnerIndex(docs)
    for _ in range(10):
        question = rnd.sample([f"w{i}" for i in range(32)], rnd.randint(1, 6))
        limit = rnd.choice((1, 3, 10, 50))
        _same(index.search(question, limit)[0], brute_force(docs, question, limit))


@pytest.mark.parametrize("seed", range(10))
def test_appends_deletes_and_compaction_keep_the_ranking(seed: int) -> None:
    rnd = random.Random(100 + seed)
    docs = _random_corpus(rnd, 200)
    index = OwnerIndex(docs[:150])
    for d in docs[150:]:  # the tail, with new lexemes too
        index.append(d)
    index.append(extra := Doc(uuid.UUID(int=rnd.getrandbits(128)), 9, ["fresh", "w1"], [2, 1]))
    live = [*docs, extra]
    for gone in rnd.sample(live, 40):
        assert index.delete(gone.id)
        live.remove(gone)
    assert not index.delete(uuid.UUID(int=rnd.getrandbits(128)))
    questions = [rnd.sample([*(f"w{i}" for i in range(30)), "fresh"], rnd.randint(1, 5)) for _ in range(10)]
    for q in questions:
        _same(index.search(q, 10)[0], brute_force(live, q, 10))
    index.compact()
    assert index.size == len(live) and index.tail_docs == 0 and index.dead == 0
    for q in questions:
        _same(index.search(q, 10)[0], brute_force(live, q, 10))
    index.append(again := Doc(uuid.UUID(int=rnd.getrandbits(128)), 3, ["w2"], [1]))
    _same(index.search(["w2"], 10)[0], brute_force([*live, again], ["w2"], 10))


def test_occurrences_are_the_most_question_lexemes_any_match_holds() -> None:
    _, occurrences = OwnerIndex(CORPUS).search(["mat", "cat"], 10)
    assert occurrences == 3  # memory 2: cat twice, mat once; memory 6: mat three times
    # the scratch arrays are reset: a second search sees no leftovers
    _, occurrences = OwnerIndex(CORPUS).search(["dog"], 10)
    index = OwnerIndex(CORPUS)
    index.search(["mat", "cat"], 10)
    hits, occurrences = index.search(["dog"], 10)
    assert occurrences == 1 and [h.id for h in hits] == [_id(3)]
    assert hits[0].score == pytest.approx(idf(6, 1))
