"""The retrieve service's pure planning (tiers, fallback labels, answer assembly) and breaker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.errors import DependencyDown, ValidationFailed
from services.retrieve.logic.breaker import Breaker
from services.retrieve.logic.fusion import Fused, Strategy
from services.retrieve.logic.plan import (
    Attempt,
    MemoryRow,
    answer,
    fallback_labels,
    plan,
    recency_ranking,
    relevant,
    single_ranking,
    store_failure,
    store_mismatch,
    tier_of,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("strategy", "query", "keyword", "vector", "recent_only", "code"),
    [
        (Strategy.EXACT, "anything", False, False, True, None),
        (Strategy.HYBRID, "", False, False, True, "empty_query"),
        (Strategy.SEMANTIC, "", False, False, True, "empty_query"),
        (Strategy.HYBRID, "tea", True, True, False, None),
        (Strategy.HYBRID, "?!", False, True, False, "keyword_unusable"),
        (Strategy.SEMANTIC, "tea", False, True, False, None),
        (Strategy.SEMANTIC, "🙂", False, True, False, "keyword_unusable"),
    ],
)
def test_plan(strategy: Strategy, query: str, keyword: bool, vector: bool, recent_only: bool, code: str | None) -> None:
    p = plan(strategy, query)
    assert (p.keyword, p.vector, p.recent_only, p.skip_code) == (keyword, vector, recent_only, code)


def test_fallback_labels_name_the_next_tier_or_who_served() -> None:
    attempts = [
        Attempt("keyword", True, 1.0),
        Attempt("qdrant", False, 0.5, "store_down"),
        Attempt("pgvector", False, 0.0, "signature_mismatch"),
    ]
    assert fallback_labels(attempts) == ["qdrant->pgvector:store_down", "pgvector->keyword:signature_mismatch"]
    attempts = [Attempt("keyword", False, 0, "keyword_unusable"), Attempt("pgvector", False, 0, "embed_timeout")]
    assert fallback_labels([*attempts, Attempt("recent", True)]) == [
        "keyword->pgvector:keyword_unusable",
        "pgvector->recent:embed_timeout",
    ]
    assert fallback_labels([Attempt("pgvector", False, 0, "store_down")]) == ["pgvector->none:store_down"]
    assert fallback_labels([Attempt("keyword", True), Attempt("pgvector", True)]) == []


def test_rankings_and_credit() -> None:
    fts = single_ranking([("a", 0.5), ("b", 0.2), ("a", 0.1)], "fts")
    assert [(f.memory_id, f.fts_rank, f.score) for f in fts] == [("a", 1, 0.5), ("b", 2, 0.2)]
    vec = single_ranking([("c", 0.9)], "vec")
    assert (vec[0].vec_rank, vec[0].vec_score, vec[0].fts_rank) == (1, 0.9, None)
    assert [(f.memory_id, f.score) for f in recency_ranking(["x", "y", "x"])] == [("x", 1.0), ("y", 0.5)]
    both = Fused(memory_id="m", score=1, fts_rank=3, vec_rank=2)
    assert tier_of(both, "qdrant") == "qdrant"
    assert tier_of(Fused(memory_id="m", score=1, fts_rank=2, vec_rank=2), "pgvector") == "keyword"
    assert tier_of(both, "pgvector", recent=True) == "recent"


def _row(memory_id: str, content: str) -> MemoryRow:
    return MemoryRow(id=memory_id, content=content, memory_type="factual", created_at=NOW)


def test_answer_drops_missing_rows_then_limit_then_budget() -> None:
    ranked = [Fused(memory_id=i, score=1.0 / n, fts_rank=n) for n, i in enumerate("abcde", 1)]
    rows = {i: _row(i, "x" * 40) for i in "acde"}  # b vanished (deleted, or no longer visible)
    out, tokens = answer(ranked, rows, limit=3, max_tokens=25, tier=lambda f: "keyword")
    assert [m.id for m in out] == ["a", "c"] and tokens == 20  # 10 tokens each; the third would be 30 > 25
    out, tokens = answer(ranked, {"a": _row("a", "y" * 4000)}, limit=5, max_tokens=1, tier=lambda f: "keyword")
    assert [m.id for m in out] == ["a"] and tokens == 1000  # at least one
    assert answer([], rows, limit=5, max_tokens=100, tier=lambda f: "keyword") == ([], 0)


def test_breaker_opens_after_threshold_and_half_opens_after_cooldown() -> None:
    b = Breaker(threshold=2, cooldown_s=10)
    assert b.allow(0) and b.state(0) == "closed"
    b.failure(0, "timeout")
    assert b.allow(1)
    b.failure(1, "timeout")
    assert not b.allow(2) and b.state(2) == "open" and b.retry_in(2) == pytest.approx(9)
    assert b.state(11) == "half_open"
    assert b.allow(11) and not b.allow(11.5)  # one trial at a time
    b.failure(12, "still down")
    assert not b.allow(13) and b.state(13) == "open"  # a failed trial re-opens at once
    assert b.allow(22)
    b.success()
    assert b.state(22) == "closed" and b.failures == 0 and b.allow(22)
    with pytest.raises(ValueError):
        Breaker(threshold=0)


def test_store_mismatch_and_failure_codes() -> None:
    assert store_mismatch(None, None, None, "s:a:4", 4) is None  # nothing recorded: let the store say
    assert store_mismatch("s:a:4", None, 4, "s:a:4", 4) is None
    assert store_mismatch("s:a:4", None, 4, "s:b:8", 8)[0] == "signature_mismatch"  # type: ignore[index]
    assert store_mismatch("s:a:4", "s:b:8", 4, "s:b:8", 8)[0] == "reindex_in_progress"  # type: ignore[index]
    assert store_mismatch("s:a:4", None, 4, "s:a:4", 5)[0] == "dimension_mismatch"  # type: ignore[index]
    assert store_failure("qdrant", TimeoutError(), 2.0) == ("store_timeout", "qdrant did not answer within 2.0 s")
    assert (
        store_failure("qdrant", DependencyDown("collection has dimension 8, query has 4"), 1)[0] == "dimension_mismatch"
    )
    assert store_failure("qdrant", DependencyDown("connection refused"), 1)[0] == "store_down"
    assert store_failure("pgvector", ValidationFailed("bad signature"), 1)[0] == "store_error"
    assert store_failure("pgvector", RuntimeError("boom"), 1) == ("store_error", "pgvector failed: RuntimeError")


def test_a_threshold_keeps_what_is_similar_enough_or_matched_the_words() -> None:
    ranked = [
        Fused(memory_id="close", score=0.03, vec_score=0.62, vec_rank=1),
        Fused(memory_id="worded", score=0.02, fts_score=0.1, fts_rank=1, vec_score=0.1, vec_rank=3),
        Fused(memory_id="far", score=0.01, vec_score=0.12, vec_rank=2),
        Fused(memory_id="unscored", score=1.0),  # newest-first: no evidence of relevance
        Fused(memory_id="nan", score=0.0, vec_score=float("nan"), vec_rank=4),
    ]
    assert [f.memory_id for f in relevant(ranked, 0.3)] == ["close", "worded"]
    assert [f.memory_id for f in relevant(ranked, 0.1)] == ["close", "worded", "far"]
    assert relevant(ranked, None) == ranked
