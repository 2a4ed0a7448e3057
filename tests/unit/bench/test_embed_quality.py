"""The embedding-variant study's pure part: the paraphrase corpus as questions, swapped vector
lists, scores per strategy and question kind, the verdict and its table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench import dense_context_logic, embed_quality, locomo, paraphrase, paraphrase_data, study
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.fusion import normalize_query
from services.retrieve.logic.plan import MemoryRow

QUESTION = "Whose dog is Rex?"


def test_paraphrase_conversation_asks_each_chosen_memory_twice_keyword_first() -> None:
    conv = embed_quality.paraphrase_conversation(60, 5, seed=19)
    assert conv.sample_id == "paraphrase" and len(conv.turns) == 60
    assert len(conv.qas) == 10
    by_dia = {t.dia_id: t for t in conv.turns}
    for keyword, paraphrased in zip(conv.qas[::2], conv.qas[1::2], strict=True):
        assert keyword.evidence == paraphrased.evidence and keyword.evidence[0] in by_dia
        assert keyword.question != paraphrased.question
    items = paraphrase_data.generate(60, 19)
    first = paraphrase.asked(paraphrase.answerable(items), 5)[0]
    assert (conv.qas[0].question, conv.qas[1].question) == (items[first].keyword, items[first].paraphrase)


def _candidates(conv: str) -> study.Candidates:
    rows = {
        i: MemoryRow(id=i, content=i, memory_type="episodic", created_at=datetime(2026, 1, 1, tzinfo=UTC), turn=n)
        for n, i in enumerate("abc")
    }
    qa = locomo.QA(question=QUESTION, category=4, evidence=("D1:3",))
    keyword = {"bm25": KeywordRanking([("a", 2.0)], 0.2)}
    return study.Candidates(conv, qa, keyword, (("a", 0.9),), rows, {"a": "D1:1", "b": "D1:2", "c": "D1:3"})


def test_swap_vectors_ranks_each_owner_by_exact_cosine_of_the_given_vectors() -> None:
    mems = {"conv-a": [dense_context_logic.Memory(i, "chat_turn", "s1", i.upper()) for i in "abc"]}
    vector_of = {
        "A": np.array([0.0, 1.0], dtype=np.float32),
        "B": np.array([0.6, 0.8], dtype=np.float32),
        "C": np.array([1.0, 0.0], dtype=np.float32),
        normalize_query(QUESTION): np.array([1.0, 0.0], dtype=np.float32),
    }
    (swapped,) = embed_quality.swap_vectors([_candidates("conv-a")], mems, vector_of)
    assert [i for i, _ in swapped.vec] == ["c", "b", "a"]
    assert [round(s, 3) for _, s in swapped.vec] == [1.0, 0.6, 0.0]
    assert embed_quality.dense_only(swapped)[:3] == ("D1:3", "D1:2", "D1:1")
    scores = embed_quality.score_locomo([swapped])
    assert scores["semantic"]["R@5"] == 1.0 and scores["hybrid"]["overall"]["R@10"] == 1.0


def test_score_paraphrase_splits_by_question_kind() -> None:
    c = _candidates("paraphrase")
    hit = study.Candidates(c.conversation, locomo.QA(QUESTION, 0, ("D1:1",)), c.keyword, c.vec, c.rows, c.dia)
    miss = study.Candidates(c.conversation, c.qa, {"bm25": KeywordRanking([], 0.0)}, (), c.rows, c.dia)
    out = embed_quality.score_paraphrase([hit, miss], ["keyword", "paraphrase"])
    assert out["hybrid"]["keyword"] == {"n": 1, "top1": 1.0, "top10": 1.0, "mrr10": 1.0, "latency_p50_ms": None}
    assert out["hybrid"]["paraphrase"]["top10"] == 0.0 and out["hybrid"]["paraphrase"]["n"] == 1
    assert out["semantic"]["keyword"]["top1"] == 1.0 and out["semantic"]["paraphrase"]["top10"] == 0.0


def _variant(
    signature: str, r10: float, keyword: float, paraphrased: float, cpu: float, worst: float = 0.74
) -> dict[str, Any]:
    top10 = {"hybrid": {"keyword": {"top10": keyword}, "paraphrase": {"top10": paraphrased}}}
    top10["semantic"] = top10["hybrid"]
    return {
        "signature": signature,
        "cpu_ms_per_text": cpu,
        "locomo": {
            "hybrid": {"overall": {"R@10": r10, "All@10": 0.7}},
            "semantic": {"R@10": 0.55},
            "hybrid_R@10_by_conversation": {"conv-a": 0.86, "conv-b": worst},
        },
        "paraphrase": top10,
    }


def test_verdict_holds_each_headline_drop_to_its_tolerance() -> None:
    base = _variant("local:m:384", 0.804, 1.0, 0.895, 6.0)
    close = {"float": base, "dynamic-int8": _variant("local:m:384:dynamic-int8", 0.8, 1.0, 0.89, 3.0)}
    assert embed_quality.verdict(close) == {
        "drops": {"locomo_hybrid_R@10": 0.004, "locomo_worst_conversation_R@10": 0.0, "paraphrase_hybrid_top10": 0.005},
        "tolerance": embed_quality.TOLERANCE,
        "passes": True,
    }
    far = {"float": base, "dynamic-int8": _variant("local:m:384:dynamic-int8", 0.804, 1.0, 0.88, 3.0)}
    assert embed_quality.verdict(far)["drops"]["paraphrase_hybrid_top10"] == 0.015
    assert embed_quality.verdict(far)["passes"] is False
    # within both overall tolerances, but the conversation served worst falls: not kept
    worse_fold = {"float": base, "dynamic-int8": _variant("local:m:384:dynamic-int8", 0.804, 1.0, 0.895, 3.0, 0.733)}
    assert embed_quality.verdict(worse_fold)["drops"]["locomo_worst_conversation_R@10"] == 0.007
    assert embed_quality.verdict(worse_fold)["passes"] is False


def test_render_shows_both_variants_and_the_verdict() -> None:
    variants = {
        "float": _variant("local:m:384", 0.804, 1.0, 0.895, 6.0),
        "dynamic-int8": _variant("local:m:384:dynamic-int8", 0.79, 1.0, 0.9, 3.0),
    }
    report = {
        "questions": 760,
        "conversations": ["conv-26"],
        "paraphrase": {"memories": 2000, "questions": 400, "seed": 19},
        "texts": 6000,
        "variants": variants,
        "verdict": embed_quality.verdict(variants),
        "cpu_ratio": 2.0,
        "cosine_to_float": {"min": 0.97, "mean": 0.988},
        "pgvector_check": {"hybrid_R@10": 0.8037, "semantic_R@10": 0.5511},
        "per_question": {
            "questions": 760,
            "better": 9,
            "worse": 14,
            "mean_difference": -0.0055,
            "standard_error": 0.003,
        },
    }
    table = embed_quality.render(report)
    assert "| dynamic-int8 | `local:m:384:dynamic-int8` | 0.790 | 0.740 (conv-b) |" in table
    assert "locomo_hybrid_R@10 +0.0140 (tolerance 0.005)" in table and "passes: no" in table
    assert "higher on 9, lower on 14 of 760; mean difference -0.0055 (standard error 0.003)" in table
    assert "2.0x" in table and "min 0.97, mean 0.988" in table


def test_paired_counts_rises_and_falls_per_question() -> None:
    def outcome(ranked: tuple[str | None, ...]) -> locomo.QAOutcome:
        return locomo.QAOutcome(1, ("D1:1", "D1:2"), ranked)

    base = [outcome(("D1:1", "D1:2")), outcome(("D1:1",)), outcome(()), outcome(("D1:2",))]
    other = [outcome(("D1:1",)), outcome(("D1:1",)), outcome(("D1:2", "D1:1")), outcome(("D1:2",))]
    got = embed_quality.paired(base, other)
    assert {k: got[k] for k in ("questions", "better", "worse", "mean_difference")} == {
        "questions": 4,
        "better": 1,
        "worse": 1,
        "mean_difference": 0.125,  # (-0.5 + 0 + 1 + 0) / 4
    }
    assert got["standard_error"] == round(float(np.std([-0.5, 0, 1, 0], ddof=1) / 2), 4)
