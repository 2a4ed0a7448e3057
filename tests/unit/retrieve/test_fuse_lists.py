"""The engine's fusion hook: the owner's settings, the keyword weight scaled by its coverage."""

from __future__ import annotations

from services.retrieve.engine import fuse_lists
from services.retrieve.logic.fusion import rrf_fuse
from shared.settings.memory import MemorySettings

QUERY = "Which engineer repaired the kestrel release?"  # 4 content words
LISTS = {"fts": [("a", 0.1), ("b", 0.05)], "vec": [("b", 0.9), ("a", 0.6)]}
ONE_WORD = 0.1  # the cover of a best match holding one question word once (ts_rank_cd's scale)


def test_score_fusion_scales_a_weak_keyword_list_down() -> None:
    off = MemorySettings(fts_weight=0.6, vec_weight=0.4, fts_full_coverage=0)
    on = MemorySettings(fts_weight=0.6, vec_weight=0.4, fts_full_coverage=0.7, fts_coverage_power=3)
    assert [f.memory_id for f in fuse_lists(LISTS, off, QUERY, ONE_WORD)] == ["a", "b"]
    fused = fuse_lists(LISTS, on, QUERY, ONE_WORD)
    assert [f.memory_id for f in fused] == ["b", "a"]
    assert fused[1].score == 0.6 * (0.25 / 0.7) ** 3


def test_a_keyword_list_that_covers_the_question_keeps_its_weight() -> None:
    on = MemorySettings(fts_weight=0.6, vec_weight=0.4, fts_full_coverage=0.7, fts_coverage_power=3)
    strong = {"fts": [("a", 0.3), ("b", 0.05)], "vec": LISTS["vec"]}
    assert [(f.memory_id, f.score) for f in fuse_lists(strong, on, QUERY, 0.3)] == [("a", 0.6), ("b", 0.4)]


def test_the_coverage_comes_from_the_cover_not_from_the_keyword_scores() -> None:
    # BM25 scores are on another scale: a top score of 7.3 says nothing about coverage
    on = MemorySettings(fts_weight=0.6, vec_weight=0.4, fts_full_coverage=0.7, fts_coverage_power=3)
    bm25 = {"fts": [("a", 7.3), ("b", 2.0)], "vec": LISTS["vec"]}
    assert [f.memory_id for f in fuse_lists(bm25, on, QUERY, ONE_WORD)] == ["b", "a"]
    assert [f.memory_id for f in fuse_lists(bm25, on, QUERY, 0.3)] == ["a", "b"]


def test_rrf_ignores_the_coverage() -> None:
    rrf = MemorySettings(fusion="rrf", fts_full_coverage=0.7, fts_coverage_power=3)
    assert fuse_lists(LISTS, rrf, QUERY, ONE_WORD) == rrf_fuse(LISTS, rrf.rrf_k, rrf.rrf_depth)
