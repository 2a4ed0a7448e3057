"""Rank fusion (RRF and score-level) and the optional session/neighbour re-scoring."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.retrieve.logic.fusion import Fused, neighbour_boost, rrf_fuse, score_fuse, session_boost


def ids(fused: list[Fused]) -> list[str]:
    return [f.memory_id for f in fused]


# --- RRF -----------------------------------------------------------------------------------


def test_rrf_hand_checked_example() -> None:
    lists = {
        "fts": [("a", 9.0), ("b", 5.0), ("c", 1.0)],
        "vec": [("b", 0.9), ("d", 0.8), ("a", 0.7)],
    }
    fused = rrf_fuse(lists)
    assert ids(fused) == ["b", "a", "d", "c"]
    by_id = {f.memory_id: f for f in fused}
    assert by_id["b"].score == pytest.approx(1 / 62 + 1 / 61)
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 63)
    assert by_id["d"].score == pytest.approx(1 / 62)
    assert by_id["c"].score == pytest.approx(1 / 63)
    assert by_id["a"] == Fused(
        memory_id="a",
        score=by_id["a"].score,
        fts_score=9.0,
        vec_score=0.7,
        fts_rank=1,
        vec_rank=3,
    )
    assert (by_id["c"].vec_rank, by_id["c"].vec_score) == (None, None)
    assert (by_id["d"].fts_rank, by_id["d"].fts_score, by_id["d"].vec_rank) == (None, None, 2)


def test_rrf_k_changes_scores() -> None:
    fused = rrf_fuse({"fts": [("a", 1.0), ("b", 0.5)]}, k=0)
    assert [f.score for f in fused] == [1.0, 0.5]


def test_rrf_depth_cuts_each_list() -> None:
    fts = [(f"f{i}", float(100 - i)) for i in range(25)]
    fused = rrf_fuse({"fts": fts})
    assert len(fused) == 20
    assert ids(fused) == [f"f{i}" for i in range(20)]
    assert fused[-1].fts_rank == 20
    assert fused[-1].score == pytest.approx(1 / 80)


def test_rrf_depth_ignores_a_rank_below_the_cut_in_one_list() -> None:
    lists = {"fts": [("x", 3.0), ("y", 2.0), ("z", 1.0)], "vec": [("z", 0.9)]}
    fused = {f.memory_id: f for f in rrf_fuse(lists, depth=2)}
    assert set(fused) == {"x", "y", "z"}
    assert fused["z"].fts_rank is None
    assert fused["z"].fts_score is None
    assert fused["z"].vec_rank == 1
    assert fused["z"].score == pytest.approx(1 / 61)


def test_rrf_tie_equal_scores_break_by_memory_id() -> None:
    fused = rrf_fuse({"fts": [("m2", 1.0)], "vec": [("m1", 0.5)]})
    assert ids(fused) == ["m1", "m2"]
    assert fused[0].score == fused[1].score == 1 / 61


def test_rrf_tie_equal_scores_break_by_best_rank_first() -> None:
    # k=0: "z" has ranks (3, 6) -> 1/3 + 1/6 = 0.5; "a" has ranks (4, 4) -> 0.5 as well.
    lists = {
        "fts": [("p1", 1.0), ("p2", 1.0), ("z", 1.0), ("a", 1.0)],
        "vec": [("q1", 1.0), ("q2", 1.0), ("q3", 1.0), ("a", 1.0), ("q5", 1.0), ("z", 1.0)],
    }
    fused = {f.memory_id: f for f in rrf_fuse(lists, k=0)}
    assert fused["z"].score == fused["a"].score == 0.5
    order = ids(rrf_fuse(lists, k=0))
    assert order.index("z") < order.index("a")  # best rank 3 beats best rank 4


def test_rrf_is_independent_of_source_order() -> None:
    fts = [("a", 1.0), ("b", 0.5), ("c", 0.2)]
    vec = [("c", 0.9), ("a", 0.8)]
    assert rrf_fuse({"fts": fts, "vec": vec}) == rrf_fuse({"vec": vec, "fts": fts})


def test_rrf_duplicate_id_in_one_list_keeps_first_position() -> None:
    fused = rrf_fuse({"fts": [("a", 3.0), ("a", 2.0), ("b", 1.0)]})
    assert [(f.memory_id, f.fts_rank, f.fts_score) for f in fused] == [
        ("a", 1, 3.0),
        ("b", 2, 1.0),
    ]


def test_rrf_empty_inputs() -> None:
    assert rrf_fuse({}) == []
    assert rrf_fuse({"fts": [], "vec": []}) == []


def test_rrf_one_list_only_keeps_its_order() -> None:
    fused = rrf_fuse({"vec": [("c", 0.9), ("a", 0.8), ("b", 0.1)]})
    assert ids(fused) == ["c", "a", "b"]
    assert all(f.fts_rank is None for f in fused)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": -1}, "k must be >= 0"),
        ({"depth": 0}, "depth must be >= 1"),
    ],
)
def test_rrf_rejects_bad_parameters(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rrf_fuse({"fts": [("a", 1.0)]}, **kwargs)


def test_rrf_rejects_unknown_source() -> None:
    with pytest.raises(ValueError, match=r"unknown ranking source 'FTS'; allowed: fts, vec"):
        rrf_fuse({"FTS": [("a", 1.0)]})


ranked = st.lists(st.tuples(st.sampled_from([f"m{i}" for i in range(30)]), st.floats(-10, 10)), max_size=40)


@given(fts=ranked, vec=ranked, k=st.integers(0, 100), depth=st.integers(1, 30))
def test_rrf_properties(fts: list[tuple[str, float]], vec: list[tuple[str, float]], k: int, depth: int) -> None:
    fused = rrf_fuse({"fts": fts, "vec": vec}, k=k, depth=depth)

    def top(lst: list[tuple[str, float]]) -> list[str]:
        return list(dict.fromkeys(mid for mid, _ in lst))[:depth]

    assert ids(fused) == list(dict.fromkeys(ids(fused)))  # unique
    assert set(ids(fused)) == set(top(fts)) | set(top(vec))
    keys = [(-f.score, f.best_rank, f.memory_id) for f in fused]
    assert keys == sorted(keys)
    for f in fused:
        expected = sum(1 / (k + r) for r in (f.fts_rank, f.vec_rank) if r is not None)
        assert f.score == pytest.approx(expected)
        assert (f.fts_rank is None) == (f.memory_id not in top(fts))
        if f.fts_rank is not None:
            assert top(fts)[f.fts_rank - 1] == f.memory_id


# --- score-level fusion --------------------------------------------------------------------


def test_score_fuse_hand_checked_example() -> None:
    lists = {
        "fts": [("a", 10.0), ("b", 6.0), ("c", 2.0)],  # -> a 1, b 0.5, c 0
        "vec": [("b", 0.9), ("d", 0.7), ("a", 0.5)],  # -> b 1, d 0.5, a 0
    }
    fused = score_fuse(lists)
    assert ids(fused) == ["b", "a", "d", "c"]
    scores = {f.memory_id: f.score for f in fused}
    assert scores == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.25})
    b = fused[0]
    assert (b.fts_score, b.fts_rank, b.vec_score, b.vec_rank) == (6.0, 2, 0.9, 1)


def test_score_fuse_weights() -> None:
    lists = {"fts": [("a", 10.0), ("b", 6.0)], "vec": [("b", 0.9), ("a", 0.1)]}
    assert ids(score_fuse(lists, weights={"fts": 1.0, "vec": 0.0})) == ["a", "b"]
    assert ids(score_fuse(lists, weights={"fts": 0.0, "vec": 1.0})) == ["b", "a"]
    fused = score_fuse(lists, weights={"fts": 0.3, "vec": 0.7})
    assert {f.memory_id: f.score for f in fused} == pytest.approx({"a": 0.3, "b": 0.7})


def test_score_fuse_all_equal_scores_normalise_to_one_for_keywords_not_for_vectors() -> None:
    fused = score_fuse({"fts": [("a", 3.0), ("b", 3.0)], "vec": [("c", 0.2)]})
    # equal keyword scores rank nothing: 1.0 each; one vector hit keeps its similarity
    assert {f.memory_id: f.score for f in fused} == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.1})
    assert ids(fused) == ["a", "b", "c"]
    equal = score_fuse({"vec": [("x", 0.3), ("y", 0.3)]})
    assert {f.memory_id: f.score for f in equal} == pytest.approx({"x": 0.15, "y": 0.15})
    clamped = score_fuse({"vec": [("x", -0.4)]}, weights={"fts": 0.5, "vec": 1.0})
    assert [(f.memory_id, f.score) for f in clamped] == [("x", 0.0)]


def test_score_fuse_one_unrelated_vector_hit_does_not_tie_a_keyword_match() -> None:
    # a memory not embedded yet is found by its words alone, and the only vector hit is another,
    # barely similar memory: with a full 1.0 for a one-hit list the two tied at 0.4 each
    fused = score_fuse({"fts": [("diet", 2.1)], "vec": [("seat", 0.12)]}, weights={"fts": 0.4, "vec": 0.4})
    assert ids(fused) == ["diet", "seat"]
    assert {f.memory_id: f.score for f in fused} == pytest.approx({"diet": 0.4, "seat": 0.048})


def test_score_fuse_negative_scores_and_missing_counts_zero() -> None:
    fused = score_fuse({"fts": [("a", -1.0), ("b", -3.0), ("c", -2.0)]})
    assert {f.memory_id: f.score for f in fused} == pytest.approx({"a": 0.5, "b": 0.0, "c": 0.25})


def test_score_fuse_non_finite_scores_count_zero() -> None:
    lists = {"vec": [("a", math.nan), ("b", 0.4), ("c", 0.2), ("d", math.inf)]}
    fused = {f.memory_id: f for f in score_fuse(lists)}
    assert fused["a"].score == 0.0
    assert fused["d"].score == 0.0
    assert fused["b"].score == 0.5
    assert fused["c"].score == 0.0
    assert math.isnan(fused["a"].vec_score or 0.0)
    only_nan = score_fuse({"vec": [("x", math.nan)]})
    assert [(f.memory_id, f.score) for f in only_nan] == [("x", 0.0)]


def test_score_fuse_depth() -> None:
    lists = {"fts": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}
    assert ids(score_fuse(lists, depth=2)) == ["a", "b"]
    assert [f.score for f in score_fuse(lists, depth=2)] == [0.5, 0.0]
    assert len(score_fuse(lists)) == 3
    with pytest.raises(ValueError, match="depth must be >= 1"):
        score_fuse(lists, depth=0)


def test_score_fuse_empty() -> None:
    assert score_fuse({}) == []
    assert score_fuse({"fts": [], "vec": []}) == []


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"fts": 0.5, "bm25": 0.5}, "unknown weight source 'bm25'"),
        ({"fts": -0.1, "vec": 0.5}, "weight for 'fts' must be finite and >= 0"),
        ({"fts": math.nan, "vec": 0.5}, "weight for 'fts' must be finite"),
        ({"fts": 1.0}, r"no weight for ranking source\(s\): vec"),
    ],
)
def test_score_fuse_rejects_bad_weights(weights: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score_fuse({"fts": [("a", 1.0)], "vec": [("a", 1.0)]}, weights=weights)


@given(fts=ranked, vec=ranked)
def test_score_fuse_properties(fts: list[tuple[str, float]], vec: list[tuple[str, float]]) -> None:
    fused = score_fuse({"fts": fts, "vec": vec})
    assert set(ids(fused)) == {mid for mid, _ in fts} | {mid for mid, _ in vec}
    assert all(0.0 <= f.score <= 1.0 + 1e-12 for f in fused)
    keys = [(-f.score, f.best_rank, f.memory_id) for f in fused]
    assert keys == sorted(keys)


# --- session and neighbour boosts ----------------------------------------------------------


def f(memory_id: str, score: float, rank: int) -> Fused:
    return Fused(memory_id=memory_id, score=score, fts_rank=rank)


def test_session_boost_hand_checked() -> None:
    fused = [f("a", 0.5, 1), f("d", 0.44, 2), f("c", 0.4, 3), f("b", 0.2, 4)]
    sessions = {"a": "s1", "b": "s1", "c": "s2", "d": None}
    boosted = session_boost(fused, sessions, share=0.5)
    # a: 0.5 + 0.5*0.5; b: 0.2 + 0.5*0.5 (best in s1 is a); c: 0.4 + 0.5*0.4; d: no session
    assert ids(boosted) == ["a", "c", "b", "d"]
    assert {x.memory_id: x.score for x in boosted} == pytest.approx({"a": 0.75, "c": 0.6, "b": 0.45, "d": 0.44})
    assert boosted[0].fts_rank == 1  # ranking info carried over
    assert fused[0].score == 0.5  # input untouched


def test_session_boost_memory_missing_from_map_is_not_boosted() -> None:
    fused = [f("a", 0.5, 1), f("b", 0.3, 2)]
    boosted = session_boost(fused, {"a": "s1"}, share=1.0)
    assert [(x.memory_id, x.score) for x in boosted] == [("a", 1.0), ("b", 0.3)]


def test_session_boost_uses_scores_before_boost_regardless_of_input_order() -> None:
    fused = [f("b", 0.2, 2), f("a", 0.5, 1)]
    boosted = session_boost(fused, {"a": "s", "b": "s"}, share=0.1)
    assert [(x.memory_id, x.score) for x in boosted] == [
        ("a", pytest.approx(0.55)),
        ("b", pytest.approx(0.25)),
    ]


def test_boosts_off_by_default_only_resort() -> None:
    fused = [f("b", 0.2, 2), f("a", 0.5, 1)]
    assert session_boost(fused, {"a": "s", "b": "s"}) == [fused[1], fused[0]]
    assert neighbour_boost(fused, {"a": ("s", 1), "b": ("s", 2)}) == [fused[1], fused[0]]
    assert session_boost([], {}, share=0.3) == []


@pytest.mark.parametrize("share", [-0.1, math.nan, math.inf])
def test_boosts_reject_bad_share(share: float) -> None:
    with pytest.raises(ValueError, match="share must be finite and >= 0"):
        session_boost([], {}, share=share)
    with pytest.raises(ValueError, match="share must be finite and >= 0"):
        neighbour_boost([], {}, share=share)


def test_neighbour_boost_hand_checked() -> None:
    fused = [f("a", 1.0, 1), f("d", 0.9, 2), f("e", 0.3, 3), f("b", 0.2, 4), f("c", 0.1, 5)]
    positions = {"a": ("s1", 5), "b": ("s1", 6), "c": ("s1", 7), "d": ("s2", 6), "e": ("s1", 3)}
    boosted = neighbour_boost(fused, positions, share=0.5)
    # a: +-1 -> b 0.2; +-2 -> e 0.3, c 0.1 at weight 0.5 -> 0.4; gain 0.5 * 0.4 = 0.2
    # b: +-1 -> a 1.0, c 0.1 -> 1.1; +-2 -> none; gain 0.55
    # c: +-1 -> b 0.2; +-2 -> a 1.0 * 0.5; gain 0.35
    # d: only one in s2 (a at s1:5 is another session); e: +-2 -> a 0.5; gain 0.25
    assert ids(boosted) == ["a", "d", "b", "e", "c"]
    assert {x.memory_id: x.score for x in boosted} == pytest.approx(
        {"a": 1.2, "b": 0.75, "c": 0.45, "d": 0.9, "e": 0.55}
    )


def test_neighbour_boost_custom_reach_and_unpositioned() -> None:
    fused = [f("a", 1.0, 1), f("b", 0.2, 2), f("x", 0.15, 4), f("c", 0.1, 3)]
    positions = {"a": ("s", 0), "b": ("s", 1), "c": ("s", 2)}
    boosted = neighbour_boost(fused, positions, share=1.0, distance_weights=(0.1,))
    assert {x.memory_id: x.score for x in boosted} == pytest.approx({"a": 1.02, "b": 0.31, "c": 0.12, "x": 0.15})
    assert neighbour_boost(fused, positions, share=1.0, distance_weights=()) == fused
