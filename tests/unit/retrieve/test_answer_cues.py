"""The answer cues: among the best results, one that is itself a question loses fused-score
points and one that says when gains some, whatever the question."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.retrieve.logic.fusion import CUE_DEPTH, Fused, cue_gains
from services.retrieve.logic.plan import MemoryRow, boost


def row(memory_id: str, content: str) -> MemoryRow:
    return MemoryRow(id=memory_id, content=content, memory_type="episodic", created_at=datetime(2026, 1, 1, tzinfo=UTC))


TEXTS = {
    "ask": "[1 May 2023] Ann: Where did you go?  ",
    "when": "[1 May 2023] Bo: We went hiking last weekend.",
    "both": "Did you see it yesterday?",
    "plain": "[1 May 2023] Bo: The lake was lovely.",
}


def test_a_question_loses_points_and_a_time_expression_gains_them() -> None:
    scores = {"ask": 1.0, "when": 0.5, "both": 0.8, "plain": 0.7, "no-text": 0.9}
    got = cue_gains(scores, TEXTS, question_penalty=0.4, time_boost=0.3)
    assert got == pytest.approx({"ask": 0.6, "when": 0.8, "both": 0.7, "plain": 0.7, "no-text": 0.9})
    assert scores["ask"] == 1.0  # the input is left alone


def test_zero_weights_change_nothing() -> None:
    scores = {"ask": 1.0, "when": 0.5}
    assert cue_gains(scores, TEXTS) is scores


def test_only_the_best_results_are_read() -> None:
    texts = {f"m{i}": "Where to?" for i in range(CUE_DEPTH + 5)}
    scores = {m: 100.0 - i for i, m in enumerate(texts)}
    got = cue_gains(scores, texts, question_penalty=0.5)
    changed = [m for m in scores if got[m] != scores[m]]
    assert changed == list(texts)[:CUE_DEPTH]


def test_boost_applies_the_cues_after_the_other_boosts() -> None:
    fused = [Fused(memory_id=m, score=s, fts_rank=r) for r, (m, s) in enumerate([("ask", 1.0), ("when", 0.8)], 1)]
    rows = {m: row(m, TEXTS[m]) for m in ("ask", "when")}
    plain = boost(fused, rows, 0.0, 0.0)
    assert [f.memory_id for f in plain] == ["ask", "when"]
    cued = boost(fused, rows, 0.0, 0.0, question_penalty=0.38, time_boost=0.31)
    assert [(f.memory_id, round(f.score, 2)) for f in cued] == [("when", 1.11), ("ask", 0.62)]


def test_a_negative_weight_is_refused() -> None:
    with pytest.raises(ValueError):
        cue_gains({"ask": 1.0}, TEXTS, question_penalty=-0.1)
