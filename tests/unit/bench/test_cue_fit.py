"""The answer cues fitted by logistic regression: where the evidence says when and the turns
that outrank it are questions, both cues come out positive, per fold and overall."""

from __future__ import annotations

from datetime import UTC, datetime

from bench import cue_fit, locomo, study
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.plan import MemoryRow

TURNS = [
    ("Where did you go?", 3.0),  # a question outranks the answer
    ("We went to the lake last weekend.", 2.0),  # the evidence, which says when
    ("The lake was cold.", 1.9),
    ("Was it sunny?", 1.8),
    ("It rained a lot.", 1.0),
]


def _candidates(conversations: int = 3, questions: int = 6) -> list[study.Candidates]:
    out = []
    for conv in range(conversations):
        for q in range(questions):
            prefix = f"c{conv}q{q}"
            ids = [f"{prefix}-{n}" for n in range(len(TURNS))]
            rows = {
                i: MemoryRow(
                    id=i,
                    content=text,
                    memory_type="episodic",
                    created_at=datetime(2026, 1, 1, tzinfo=UTC),
                    session_id=f"{prefix}-s",
                    turn=10 * n,  # far apart: no neighbour boost
                )
                for n, (i, (text, _)) in enumerate(zip(ids, TURNS, strict=True))
            }
            ranked = [(i, score) for i, (_, score) in zip(ids, TURNS, strict=True)]
            qa = locomo.QA(question="Where did they go?", category=4, evidence=(f"D{q}:1",))
            dia = {i: f"D{q}:{n}" for n, i in enumerate(ids)}
            keyword = {"bm25": KeywordRanking(ranked, 0.2)}
            out.append(study.Candidates(f"conv-{conv}", qa, keyword, (), rows, dia))
    return out


def test_the_cues_are_fitted_positive_and_lift_the_evidence() -> None:
    cands = _candidates()
    off = study.Params(session_boost=0.0, neighbour_boost=0.0)
    penalty, bonus = cue_fit.fit(cands, off)
    assert penalty > 0 and bonus > 0
    fitted = study.Params(session_boost=0.0, neighbour_boost=0.0, question_penalty=penalty, time_mention_boost=bonus)
    for c in cands:
        assert study.rank(c, off)[0] != c.qa.evidence[0]
        assert study.rank(c, fitted)[0] == c.qa.evidence[0]
    report = cue_fit.folds(cands, off)
    assert [f["held_out"] for f in report["folds"]] == ["conv-0", "conv-1", "conv-2"]
    assert all(f["questionPenalty"] > 0 and f["timeMentionBoost"] > 0 for f in report["folds"])
    assert report["fitted_on_all"] == {"questionPenalty": penalty, "timeMentionBoost": bonus}
