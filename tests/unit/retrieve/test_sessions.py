"""Session-level re-scoring: a session's evidence over its best members, and the spread over sessions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.retrieve.logic.fusion import Fused, session_gains
from services.retrieve.logic.plan import MemoryRow, boost
from services.retrieve.logic.sessions import evidence_gains, spread_scores


def f(memory_id: str, score: float, rank: int) -> Fused:
    return Fused(memory_id=memory_id, score=score, fts_rank=rank)


def row(memory_id: str, session: str | None) -> MemoryRow:
    return MemoryRow(
        id=memory_id,
        content="x",
        memory_type="episodic",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        session_id=session,
    )


SCORES = {"a1": 0.9, "a2": 0.1, "b1": 0.6, "b2": 0.5, "c": 0.8}
SESSIONS = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c": None}


def test_one_member_is_the_best_score_of_the_session() -> None:
    assert evidence_gains(SCORES, SESSIONS, 0.5, members=1) == session_gains(SCORES, SESSIONS, 0.5)


def test_two_members_favour_a_session_with_two_matches() -> None:
    out = evidence_gains(SCORES, SESSIONS, 1.0, members=2)
    # A: (0.9 + 0.1) / 2 = 0.5; B: (0.6 + 0.5) / 2 = 0.55; no session: unchanged
    assert out == {
        "a1": pytest.approx(1.4),
        "a2": pytest.approx(0.6),
        "b1": pytest.approx(1.15),
        "b2": pytest.approx(1.05),
        "c": 0.8,
    }


def test_a_session_with_fewer_candidates_counts_the_missing_as_zero() -> None:
    out = evidence_gains({"x": 0.8, "y": 0.4, "z": 0.4}, {"x": "X", "y": "Y", "z": "Y"}, 1.0, members=3)
    y = pytest.approx(0.4 + 0.8 / 3)  # Y: (0.4 + 0.4 + 0) / 3
    assert out == {"x": pytest.approx(0.8 + 0.8 / 3), "y": y, "z": y}


def test_share_zero_changes_nothing_and_bad_members_are_refused() -> None:
    assert evidence_gains(SCORES, SESSIONS, 0.0, members=3) == SCORES
    with pytest.raises(ValueError, match="members"):
        evidence_gains(SCORES, SESSIONS, 0.3, members=0)
    with pytest.raises(ValueError, match="share"):
        evidence_gains(SCORES, SESSIONS, -1.0, members=2)


def test_spread_discounts_each_further_result_of_a_session() -> None:
    ranked = [f("a1", 1.0, 1), f("a2", 0.9, 2), f("a3", 0.8, 3), f("b1", 0.7, 4), f("n", 0.6, 5)]
    sessions = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "n": None}
    out = spread_scores(ranked, sessions, 0.5)
    assert out == {"a1": 1.0, "a2": pytest.approx(0.45), "a3": pytest.approx(0.2), "b1": 0.7, "n": 0.6}


def test_spread_zero_keeps_the_scores_and_a_weight_of_one_is_refused() -> None:
    ranked = [f("a1", 1.0, 1), f("a2", 0.9, 2)]
    assert spread_scores(ranked, {"a1": "A", "a2": "A"}, 0.0) == {"a1": 1.0, "a2": 0.9}
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="weight"):
            spread_scores(ranked, {}, bad)


def test_boost_puts_a_second_sessions_best_before_a_third_turn_of_the_first() -> None:
    ranked = [f("a1", 1.0, 1), f("a2", 0.95, 2), f("a3", 0.9, 3), f("b1", 0.8, 4)]
    rows = {i: row(i, i[0].upper()) for i in ("a1", "a2", "a3", "b1")}
    plain = boost(ranked, rows, 0.0, 0.0)
    assert [x.memory_id for x in plain] == ["a1", "a2", "a3", "b1"]
    spread = boost(ranked, rows, 0.0, 0.0, session_spread=0.2)
    # a2: 0.95 x 0.8 = 0.76, a3: 0.9 x 0.64 = 0.576; b1 keeps 0.8
    assert [(x.memory_id, x.score) for x in spread] == [
        ("a1", 1.0),
        ("b1", 0.8),
        ("a2", pytest.approx(0.76)),
        ("a3", pytest.approx(0.576)),
    ]
    assert spread[1].fts_rank == 4  # ranking info carried over


def test_boost_with_session_evidence_lifts_the_session_of_two_matches() -> None:
    ranked = [f("a1", 0.9, 1), f("b1", 0.6, 2), f("b2", 0.55, 3), f("a2", 0.05, 4)]
    rows = {i: row(i, i[0].upper()) for i in ("a1", "b1", "b2", "a2")}
    best = boost(ranked, rows, 1.0, 0.0)  # each gains its session's best: a1 1.8, b1 1.2
    assert [x.memory_id for x in best][:2] == ["a1", "b1"]
    two = boost(ranked, rows, 1.0, 0.0, session_members=2)  # A: 0.475, B: 0.575
    assert [(x.memory_id, x.score) for x in two] == [
        ("a1", pytest.approx(1.375)),
        ("b1", pytest.approx(1.175)),
        ("b2", pytest.approx(1.125)),
        ("a2", pytest.approx(0.525)),
    ]


def test_settings_bound_the_session_levers() -> None:
    from memoryd.errors import ValidationFailed
    from shared.settings.memory import validate

    s = validate({"sessionEvidence": 3, "sessionSpread": 0.25})
    assert (s.session_evidence, s.session_spread) == (3, 0.25)
    assert (validate({}).session_evidence, validate({}).session_spread) == (1, 0.0)
    for bad in ({"sessionEvidence": 0}, {"sessionEvidence": 11}, {"sessionSpread": 1.0}, {"sessionSpread": -0.1}):
        with pytest.raises(ValidationFailed):
            validate(bad)
