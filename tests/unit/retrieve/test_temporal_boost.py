"""The temporal boost: when a question asks when, a result that says when gains a share of its score."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.retrieve.logic.fusion import Fused, temporal_gains
from services.retrieve.logic.plan import MemoryRow, boost
from services.retrieve.logic.time_cues import asks_when, says_when


def f(memory_id: str, score: float, rank: int) -> Fused:
    return Fused(memory_id=memory_id, score=score, fts_rank=rank)


def row(memory_id: str, content: str) -> MemoryRow:
    return MemoryRow(id=memory_id, content=content, memory_type="episodic", created_at=datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("  when is the concert", True),
        ("WHEN?", True),
        ("What did Caroline do when she moved?", False),
        ("Whenever I travel, what do I pack?", False),
        ("", False),
    ],
)
def test_a_question_asks_when_by_its_first_word(question: str, asks: bool) -> None:
    assert asks_when(question) is asks


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("I went to the LGBTQ support group yesterday.", True),
        ("We adopted her two weeks ago!", True),
        ("Last Friday I finally finished it", True),
        ("see you next month", True),
        ("I run on Saturdays", True),
        ("It was a great painting.", False),
        ("[1:56 pm on 8 May, 2023] Melanie: The colors really blend nicely.", False),  # a date prefix is no cue
        ("My agony over the decision", False),  # "ago" only as a word
    ],
)
def test_a_text_says_when_by_a_relative_time_expression_or_weekday(text: str, says: bool) -> None:
    assert says_when(text) is says


def test_only_when_questions_lift_only_memories_that_say_when() -> None:
    scores = {"a": 0.5, "b": 0.4, "c": 0.3}
    texts = {"a": "It was lovely.", "b": "We went there last week.", "c": "Yesterday, finally!"}
    lifted = temporal_gains(scores, texts, "When did they go?", share=0.5)
    assert lifted == {"a": 0.5, "b": pytest.approx(0.6), "c": pytest.approx(0.45)}
    assert temporal_gains(scores, texts, "Where did they go?", share=0.5) == scores
    assert temporal_gains(scores, {}, "When did they go?", share=0.5) == scores  # no text: no gain


def test_share_must_be_finite_and_not_negative() -> None:
    with pytest.raises(ValueError, match="share"):
        temporal_gains({"a": 1.0}, {"a": "yesterday"}, "when?", share=-0.1)


def test_boost_applies_the_temporal_share_last() -> None:
    fused = [f("a", 0.5, 1), f("b", 0.4, 2)]
    rows = {"a": row("a", "A lovely hike."), "b": row("b", "We hiked last Sunday.")}
    out = boost(fused, rows, 0.0, 0.0, 0.0, "When did they hike?", 0.5)
    assert [(x.memory_id, x.score) for x in out] == [("b", pytest.approx(0.6)), ("a", 0.5)]
    assert boost(fused, rows, 0.0, 0.0, 0.0, "What did they hike?", 0.5) == fused
    assert boost(fused, rows, 0.0, 0.0, 0.0, "When did they hike?") == fused  # off by default
