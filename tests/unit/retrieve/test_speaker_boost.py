"""The speaker boost: a result said by someone the question names gains a share of its score."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.retrieve.logic.fusion import Fused, query_words, speaker_boost
from services.retrieve.logic.plan import MemoryRow, boost


def f(memory_id: str, score: float, rank: int) -> Fused:
    return Fused(memory_id=memory_id, score=score, fts_rank=rank)


def row(memory_id: str, metadata: str, session: str | None = None, turn: int | None = None) -> MemoryRow:
    return MemoryRow(
        id=memory_id,
        content="x",
        memory_type="episodic",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        session_id=session,
        metadata_json=metadata,
        turn=turn,
    )


def test_query_words_casefold_and_split_possessives() -> None:
    assert query_words("What did Caroline's SISTER do?") == {"what", "did", "caroline", "s", "sister", "do"}


def test_named_speaker_gains_share_of_own_score() -> None:
    fused = [f("a", 0.5, 1), f("b", 0.4, 2), f("c", 0.3, 3)]
    speakers = {"a": "Melanie", "b": "Caroline", "c": None}
    out = speaker_boost(fused, speakers, "When did caroline go hiking?", share=0.5)
    assert [(x.memory_id, x.score) for x in out] == [("b", pytest.approx(0.6)), ("a", 0.5), ("c", 0.3)]
    assert out[0].fts_rank == 2  # ranking info carried over


def test_multi_word_name_needs_every_word() -> None:
    fused = [f("a", 0.5, 1), f("b", 0.4, 2)]
    speakers = {"a": "Anna Berg", "b": "Anna Berg"}
    assert speaker_boost(fused, speakers, "what did anna say", share=1.0)[0].score == 0.5
    assert speaker_boost(fused, speakers, "what did Anna Berg say", share=1.0)[0].score == 1.0


def test_share_zero_only_resorts() -> None:
    fused = [f("b", 0.2, 2), f("a", 0.5, 1)]
    out = speaker_boost(fused, {"a": "Ann", "b": "Ann"}, "Ann?", share=0.0)
    assert [(x.memory_id, x.score) for x in out] == [("a", 0.5), ("b", 0.2)]


def test_row_speaker_comes_from_metadata_only_when_a_string() -> None:
    assert row("a", '{"speaker": "Caroline", "role": "user"}').speaker == "Caroline"
    assert row("a", '{"role": "user"}').speaker is None
    assert row("a", '{"speaker": 3}').speaker is None


def test_boost_applies_session_neighbour_then_speaker() -> None:
    fused = [f("a", 0.5, 1), f("b", 0.4, 2)]
    rows = {"a": row("a", '{"speaker": "Mel"}', "s", 1), "b": row("b", '{"speaker": "Jon"}', "s", 2)}
    out = boost(fused, rows, 0.0, 0.5, 1.0, "what did jon paint")
    # neighbours: a 0.5 + 0.5*0.4 = 0.7, b 0.4 + 0.5*0.5 = 0.65; speaker: b 0.65 * 2 = 1.3
    assert [(x.memory_id, x.score) for x in out] == [("b", pytest.approx(1.3)), ("a", pytest.approx(0.7))]
    assert boost(fused, rows, 0.0, 0.0, 1.0, "") == fused  # no query: no speaker boost
