"""Fusion and boosts against plain reference versions: the same scores bit for bit.

The engine's versions avoid per-candidate objects for speed; the reference versions below say the
same thing the slow, obvious way (one dict of hits per memory, one gain function per boost).
Scores are compared by ``repr`` so that -0.0, NaN and the last bit count; any ranking change
fails here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from services.retrieve.logic.fusion import (
    Fused,
    RankedList,
    neighbour_boost,
    query_words,
    rrf_fuse,
    score_fuse,
    session_boost,
    speaker_boost,
)


def _canonical(items: Sequence[Fused]) -> list[Fused]:
    return sorted(items, key=lambda f: (-f.score, f.best_rank, f.memory_id))


def _fuse(lists: Mapping[str, RankedList], depth: int | None, score_of: Callable[..., float]) -> list[Fused]:
    found: dict[str, dict[str, tuple[int, float]]] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for source, ranked in lists.items():
        rank = 0
        for memory_id, raw in ranked:
            if depth is not None and rank >= depth:
                break
            hits = found.setdefault(memory_id, {})
            if source not in hits:
                rank += 1
                hits[source] = (rank, raw)
                if math.isfinite(raw):
                    lo, hi = bounds.get(source, (raw, raw))
                    bounds[source] = (min(lo, raw), max(hi, raw))
    none = (None, None)
    return _canonical(
        [
            Fused(
                memory_id=memory_id,
                score=score_of(hits, bounds),
                fts_rank=hits.get("fts", none)[0],
                fts_score=hits.get("fts", none)[1],
                vec_rank=hits.get("vec", none)[0],
                vec_score=hits.get("vec", none)[1],
            )
            for memory_id, hits in found.items()
        ]
    )


def ref_rrf(lists: Mapping[str, RankedList], k: int, depth: int) -> list[Fused]:
    return _fuse(lists, depth, lambda hits, _: math.fsum(1.0 / (k + r) for r, _ in hits.values()))


def _minmax(source: str, raw: float, lo: float, hi: float) -> float:
    if not math.isfinite(raw):
        return 0.0
    if hi == lo:  # a list that ranks nothing: keyword 1.0, a vector similarity its own (0..1)
        return 1.0 if source == "fts" else min(1.0, max(0.0, raw))
    return (raw - lo) / (hi - lo)


def ref_score(lists: Mapping[str, RankedList], weights: Mapping[str, float], depth: int | None) -> list[Fused]:
    return _fuse(
        lists,
        depth,
        lambda hits, bounds: math.fsum(
            weights[s] * _minmax(s, raw, *bounds.get(s, (0.0, 0.0))) for s, (_, raw) in hits.items()
        ),
    )


def _boosted(
    fused: Sequence[Fused], share: float, gain_of: Callable[[str, float, dict[str, float]], float]
) -> list[Fused]:
    scores: dict[str, float] = {}
    for f in fused:
        scores.setdefault(f.memory_id, f.score)
    out = {}
    for memory_id, score in scores.items():
        gain = share * gain_of(memory_id, score, scores)
        out[memory_id] = score + gain if gain else score
    return _canonical([f if (s := out[f.memory_id]) == f.score else msgspec.structs.replace(f, score=s) for f in fused])


def ref_session(fused: Sequence[Fused], session_of: Mapping[str, str | None], share: float) -> list[Fused]:
    def gain(memory_id: str, _score: float, scores: dict[str, float]) -> float:
        session = session_of.get(memory_id)
        if session is None:
            return 0.0
        return max(s for i, s in scores.items() if session_of.get(i) == session)

    return _boosted(fused, share, gain)


def ref_neighbour(fused: Sequence[Fused], position_of: Mapping[str, tuple[str, int]], share: float) -> list[Fused]:
    def gain(memory_id: str, _score: float, scores: dict[str, float]) -> float:
        if (pos := position_of.get(memory_id)) is None:
            return 0.0
        at: dict[tuple[str, int], float] = {}
        for i, s in scores.items():
            if (p := position_of.get(i)) is not None:
                at[p] = max(at.get(p, -math.inf), s)
        session, index = pos
        return math.fsum(
            w * (at.get((session, index - d), 0.0) + at.get((session, index + d), 0.0)) for d, w in ((1, 1.0), (2, 0.5))
        )

    return _boosted(fused, share, gain)


def ref_speaker(fused: Sequence[Fused], speaker_of: Mapping[str, str | None], query: str, share: float) -> list[Fused]:
    def gain(memory_id: str, score: float, _scores: dict[str, float]) -> float:
        speaker = speaker_of.get(memory_id)
        parts = query_words(speaker) if speaker else frozenset()
        return score if parts and parts <= query_words(query) else 0.0

    return _boosted(fused, share, gain)


def same(a: list[Fused], b: list[Fused]) -> bool:
    return repr(a) == repr(b)


IDS = [f"m{i}" for i in range(25)]
raw = st.one_of(st.floats(-2, 2), st.sampled_from([0.0, -0.0, 0.5, 1.0, math.nan, math.inf, -math.inf]))
ranked = st.lists(st.tuples(st.sampled_from(IDS), raw), max_size=40)
lists = st.dictionaries(st.sampled_from(["fts", "vec"]), ranked, max_size=2)
share = st.sampled_from([0.0, 0.3, 1.0, 0.7071])


@settings(max_examples=300)
@given(lists=lists, k=st.sampled_from([0, 1, 60]), depth=st.integers(1, 50))
def test_rrf_fuse_is_the_reference(lists: dict[str, RankedList], k: int, depth: int) -> None:
    assert same(rrf_fuse(lists, k, depth), ref_rrf(lists, k, depth))


@settings(max_examples=300)
@given(
    lists=lists,
    fts=st.sampled_from([0.0, -0.0, 0.5, 1.0, 0.123]),
    vec=st.sampled_from([0.0, 0.5, 1.0]),
    depth=st.one_of(st.none(), st.integers(1, 50)),
)
def test_score_fuse_is_the_reference(lists: dict[str, RankedList], fts: float, vec: float, depth: int | None) -> None:
    weights = {"fts": fts, "vec": vec}
    assert same(score_fuse(lists, weights, depth), ref_score(lists, weights, depth))


@settings(max_examples=300)
@given(
    lists=lists,
    data=st.data(),
    share=share,
)
def test_boosts_are_the_reference(lists: dict[str, RankedList], data: st.DataObject, share: float) -> None:
    duplicate = data.draw(st.sampled_from([[], [Fused(memory_id="m1", score=0.9)]]))  # the first one counts
    fused = score_fuse(lists, {"fts": 0.5, "vec": 0.5}) + duplicate
    ids = st.sampled_from(IDS)
    sessions = data.draw(st.dictionaries(ids, st.sampled_from(["s1", "s2", "s3", None])))
    positions = data.draw(st.dictionaries(ids, st.tuples(st.sampled_from(["s1", "s2"]), st.integers(0, 8))))
    speakers = data.draw(st.dictionaries(ids, st.sampled_from(["Ann", "Ann Lee", "Bo", "", None])))
    query = data.draw(st.sampled_from(["", "what did ann say", "did Ann Lee or bo go?", "lee"]))
    assert same(session_boost(fused, sessions, share), ref_session(fused, sessions, share))
    assert same(neighbour_boost(fused, positions, share), ref_neighbour(fused, positions, share))
    assert same(speaker_boost(fused, speakers, query, share), ref_speaker(fused, speakers, query, share))
