"""The in-memory keyword index: the same top k and scores as BM25 computed memory by memory."""

from __future__ import annotations

import math
import random
import uuid

import pytest

from services.retrieve.logic.bm25 import idf, score
from services.retrieve.logic.keyword_index import NEVER, Doc, Hit, OwnerIndex, View, brute_force


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
    assert [h.id for h in hits] == [str(_id(4)), str(_id(5)), str(_id(1)), str(_id(2))]
    assert [h.score for h in hits] == pytest.approx([pair, pair, pair, two], rel=1e-12)
    assert occurrences == 2
    _same(hits, brute_force(CORPUS, ["cat", "sat", "fish"], 10))


def test_limit_cuts_inside_a_tie_group_by_date_then_id() -> None:
    hits, _ = OwnerIndex(CORPUS).search(["cat", "sat"], 2)
    assert [h.id for h in hits] == [str(_id(4)), str(_id(5))]
    hits, _ = OwnerIndex(CORPUS).search(["cat", "sat"], 1)
    assert [h.id for h in hits] == [str(_id(4))]


def test_no_match_and_unknown_lexemes() -> None:
    assert OwnerIndex(CORPUS).search(["zebra"], 10) == ([], 0)
    assert OwnerIndex(CORPUS).search([], 10) == ([], 0)
    assert OwnerIndex([]).search(["cat"], 10) == ([], 0)


def test_ids_sort_as_uuids_across_both_halves() -> None:
    # same score and date: PostgreSQL orders uuids bytewise, so the high half decides first
    docs = [Doc(uuid.UUID(int=(1 << 64) + 0), 5, ["a"], [1]), Doc(uuid.UUID(int=(0 << 64) + 9), 5, ["a"], [1])]
    hits, _ = OwnerIndex(docs).search(["a"], 2)
    assert [uuid.UUID(h.id).int for h in hits] == [9, 1 << 64]


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
    assert occurrences == 1 and [h.id for h in hits] == [str(_id(3))]
    assert hits[0].score == pytest.approx(idf(6, 1))


# visibility: views over per-memory columns, through appends, deletes and compaction ------------

_VOCAB = [f"w{i}" for i in range(12)]


def _random_doc(rnd: random.Random, i: int) -> Doc:
    lex = rnd.sample(_VOCAB, rnd.randint(1, 4))
    return Doc(
        _id(rnd.getrandbits(64) << 32 | i),
        rnd.randrange(0, 1000, 50),
        lex,
        [rnd.randint(1, 3) for _ in lex],
        expires_us=rnd.choice([500, 2000, int(NEVER)]),
        type=rnd.choice(["factual", "episodic"]),
        session_id=rnd.choice(["s1", "s2", None]),
        agent_id=rnd.choice(["a1", None]),
        global_scope=rnd.random() < 0.2,
    )


def _reference(docs: list[Doc], view: View, lexemes: list[str], limit: int) -> list[Hit]:
    """The statement's clauses written out memory by memory: ``own`` counts for ``N``, the owner's
    global memories of other sessions or agents only match."""

    def common(d: Doc) -> bool:
        typed = view.types is None or d.type in view.types
        return d.expires_us > view.now_us and d.created_us > view.created_after_us and typed

    def own(d: Doc) -> bool:
        return (view.session_id is None or d.session_id == view.session_id) and (
            view.agent_id is None or d.agent_id == view.agent_id
        )

    seen = [d for d in docs if common(d) and (own(d) or d.global_scope)]
    n = sum(1 for d in docs if common(d) and own(d))
    question = sorted(set(lexemes))
    df = {x: sum(x in d.lexemes for d in seen) for x in question}
    ranked = []
    for d in seen:
        tf = dict(zip(d.lexemes, d.counts, strict=True))
        if held := [x for x in question if x in tf]:
            s = score(n, [df[x] for x in held], [tf[x] for x in held])
            ranked.append((-s, -d.created_us, d.id.bytes, Hit(str(d.id), s)))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:limit]]


def _close(got: list[Hit], want: list[Hit]) -> None:
    assert [h.id for h in got] == [h.id for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-12)


VIEWS = [
    View(1000, 100),
    View(1000, -1, session_id="s1"),
    View(1000, 300, agent_id="a1", types=("episodic",)),
    View(1000, -1, session_id="s2", agent_id="a1"),
    View(600, -1, session_id="unknown"),
    View(1000, -1, types=("procedural",)),
]


def test_views_match_the_statements_clauses_through_appends_deletes_and_compaction() -> None:
    rnd = random.Random(3)
    docs = [_random_doc(rnd, i) for i in range(150)]
    index = OwnerIndex(docs)
    for step in range(6):
        for view in VIEWS:
            for _ in range(5):
                q, limit = rnd.sample(_VOCAB, rnd.randint(1, 3)), rnd.choice([3, 10, 500])
                _close(index.search(q, limit, view)[0], _reference(docs, view, q, limit))
        # appends, deletes (an update is both), then every other round a compaction
        for _ in range(20):
            d = _random_doc(rnd, 1000 * (step + 1) + len(docs))
            docs.append(d)
            index.append(d)
        for gone in rnd.sample(docs, 15):
            assert index.delete(gone.id)
            docs.remove(gone)
        assert not index.delete(_id(1))  # never held
        assert index.dirty() == 20 * (step % 2 + 1) + 15 * (step % 2 + 1)
        if step % 2:
            index.compact()
            assert index.dirty() == 0 and index.size == len(docs)


def test_the_time_filters_follow_each_request_while_nothing_is_written() -> None:
    """``visible`` keeps its time-independent part between requests; the time still counts, whether
    no memory is expired or too old (the kept mask as it is) or some are (filtered again)."""
    rnd = random.Random(5)
    docs = [_random_doc(rnd, i) for i in range(120)]
    index = OwnerIndex(docs)
    for now, after in [(100, -1), (600, -1), (100, -1), (2500, 400), (400, -1), (100, 0), (100, -1)]:
        for session in (None, "s1"):
            view = View(now, after, session_id=session)
            q = rnd.sample(_VOCAB, 3)
            _close(index.search(q, 500, view)[0], _reference(docs, view, q, 500))
            visible = {str(d.id) for d in docs if _sees(d, view)}
            mask, _ = index.visible(view)
            assert {str(d.id) for i, d in enumerate(docs) if mask[i]} == visible


def _sees(d: Doc, view: View) -> bool:
    own = view.session_id is None or d.session_id == view.session_id
    return d.expires_us > view.now_us and d.created_us > view.created_after_us and (own or d.global_scope)


def test_a_full_room_grows_and_keeps_every_column() -> None:
    index = OwnerIndex([])
    docs = [Doc(_id(i + 1), i, ["w"], [1], session_id="s" if i % 2 else None) for i in range(200)]
    for d in docs:
        index.append(d)
    hits, _ = index.search(["w"], 500, View(10_000, -1, session_id="s"))
    assert {h.id for h in hits} == {str(d.id) for d in docs if d.session_id == "s"}
    index.compact()
    hits, _ = index.search(["w"], 1, View(10_000, -1, session_id="s"))
    assert [h.id for h in hits] == [str(_id(200))]  # the newest
