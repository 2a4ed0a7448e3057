"""Leave-one-conversation-out selection and the in-process study's ranking on hand-made candidates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench import folds, study
from bench.locomo import QA, QAOutcome
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.plan import MemoryRow


def outcome(hit: bool) -> QAOutcome:
    return QAOutcome(category=4, evidence=("D1:1",), ranked=("D1:1",) if hit else ("D1:2",))


def test_each_fold_is_tuned_on_the_other_conversations_only() -> None:
    # point 0 is perfect on c1 only, point 1 on c2 and c3: held out c1 -> point 1 chosen (scores 0 on c1)
    outcomes = {
        0: {"c1": [outcome(True)] * 3, "c2": [outcome(False)], "c3": [outcome(False)]},
        1: {"c1": [outcome(False)] * 3, "c2": [outcome(True)], "c3": [outcome(True)]},
    }
    result = folds.evaluate(["p0", "p1"], outcomes)
    chosen = {f.held_out: f.chosen for f in result.folds}
    assert chosen == {"c1": "p1", "c2": "p0", "c3": "p0"}
    assert [f.held_out_scores["overall"]["R@10"] for f in result.folds] == [0.0, 0.0, 0.0]
    assert result.in_sample_point == "p0"  # 3 of 5 questions in-sample
    assert result.held_out_mean() == 0.0 and result.worst().held_out == "c1"
    summary = folds.summary(result, str)
    assert summary["held_out_mean"]["overall"]["R@10"] == 0.0
    assert summary["in_sample"]["chosen"] == "p0"


def test_the_ceiling_is_each_conversations_best_point_chosen_on_itself() -> None:
    from bench import protocol

    outcomes = {
        0: {"c1": [outcome(True), outcome(False)], "c2": [outcome(True)]},
        1: {"c1": [outcome(True), outcome(True)], "c2": [outcome(False)]},
        2: {"c1": [outcome(True), outcome(True)], "c2": [outcome(True)]},  # ties c1's best: the earlier point stays
    }
    top = folds.ceiling(["p0", "p1", "p2"], outcomes, str)
    assert top == {"c1": {"R@10": 1.0, "settings": "p1"}, "c2": {"R@10": 1.0, "settings": "p0"}}
    (line,) = protocol._ceiling_lines({"ceiling": top})
    assert line.endswith("chosen on each conversation itself): c1 1.0, c2 1.0")
    assert protocol._ceiling_lines({}) == []


def test_ties_go_to_the_earlier_point() -> None:
    same = {"a": [outcome(True)], "b": [outcome(True)]}
    result = folds.evaluate(["defaults", "other"], {0: same, 1: same})
    assert {f.chosen for f in result.folds} == {"defaults"} and result.in_sample_point == "defaults"


def test_one_conversation_has_nothing_to_hold_out() -> None:
    with pytest.raises(ValueError, match="at least two conversations"):
        folds.evaluate(["defaults"], {0: {"only": [outcome(True)]}})


def _keyword(ranked: tuple[tuple[str, float], ...]) -> dict[str, KeywordRanking]:
    """A ts_rank_cd keyword list as the default (bm25) scoring's answer: its top score is its cover."""
    return {"bm25": KeywordRanking.by_cover_density(list(ranked))}


def _row(memory_id: str, turn: int, speaker: str) -> MemoryRow:
    return MemoryRow(
        id=memory_id,
        content="x",
        memory_type="episodic",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        session_id="s",
        metadata_json=f'{{"speaker": "{speaker}"}}',
        turn=turn,
    )


def test_rank_truncates_each_list_to_the_depth_and_boosts() -> None:
    rows = {"a": _row("a", 1, "Mel"), "b": _row("b", 5, "Jon"), "c": _row("c", 9, "Mel")}
    cands = study.Candidates(
        conversation="c1",
        qa=QA(question="what did Jon paint?", category=4, evidence=("D1:2",)),
        keyword=_keyword((("a", 2.0), ("b", 1.0), ("c", 0.5))),
        vec=(("a", 0.9), ("c", 0.8), ("b", 0.1)),
        rows=rows,
        dia={"a": "D1:1", "b": "D1:2", "c": "D1:3"},
    )

    def params(depth: int, speaker: float) -> study.Params:
        return study.Params(depth=depth, session_boost=0, neighbour_boost=0, speaker_boost=speaker)

    # depth 3: a = 1; b = 0.5 * (1 - 0.5) / 1.5 = 0.167; c = 0.5 * (0.8 - 0.1) / 0.8 = 0.4375
    assert study.rank(cands, params(3, 0)) == ("D1:1", "D1:3", "D1:2")
    assert study.rank(cands, params(1, 0)) == ("D1:1",)  # only the top 1 of each list
    assert study.rank(cands, params(3, 3.0))[0] == "D1:1"  # b: 0.167 * 4 < 1
    assert study.rank(cands, params(3, 9.0))[0] == "D1:2"  # b: 0.167 * 10 > 1


def test_rank_weighs_the_keyword_list_by_its_coverage() -> None:
    rows = {"a": _row("a", 1, "Mel"), "b": _row("b", 5, "Jon")}
    cands = study.Candidates(
        conversation="c1",
        qa=QA(question="which engineer repaired the kestrel release?", category=4, evidence=("D1:2",)),
        keyword=_keyword((("a", 0.1), ("b", 0.05))),  # the best match holds 1 of 4 content words
        vec=(("b", 0.9), ("a", 0.6)),
        rows=rows,
        dia={"a": "D1:1", "b": "D1:2"},
    )
    off = study.Params(depth=2, session_boost=0, neighbour_boost=0, fts_weight=0.6, vec_weight=0.4)
    on = study.Params(**{**off.as_dict(), "fts_full_coverage": 0.7})
    assert study.rank(cands, off) == ("D1:1", "D1:2")  # a: 0.6 > b: 0.4
    assert study.rank(cands, on) == ("D1:2", "D1:1")  # a: 0.6 * (0.25 / 0.7) ** 4 < b: 0.4
    assert "coverage=0.7^4" in on.label() and "coverage" not in off.label()


def test_each_value_of_a_lever_is_folded_over_its_own_points() -> None:
    from bench import protocol

    bm25, dense = study.Params(), study.Params(keyword_ranking="cover_density")
    outcomes = {
        0: {"c1": [outcome(True)], "c2": [outcome(True)]},  # bm25: every question found
        1: {"c1": [outcome(True)], "c2": [outcome(False)]},  # cover density: one of two
    }
    got = protocol.by_lever([bm25, dense], outcomes, "keyword_ranking")
    assert got["bm25"]["held_out_mean_R@10"] == 1.0 and got["bm25"]["points"] == 1
    assert got["cover_density"]["held_out_mean_R@10"] == 0.5
    assert got["cover_density"]["worst_fold"] == {"held_out": "c2", "R@10": 0.0}
    assert got["cover_density"]["in_sample_R@10"] == 0.5
    lines = protocol._lever_lines({"keyword_scoring": got, "keyword_coverage": {"0.5": got["bm25"]}})
    assert len(lines) == 1  # a lever of one value says nothing
    assert "cover_density (1 points) held-out R@10 mean 0.5, worst fold c2 0.0" in lines[0]


def test_the_spread_gives_each_categorys_mean_worst_and_best_fold() -> None:
    temporal_hit = QAOutcome(category=2, evidence=("D1:1",), ranked=("D1:1",))
    temporal_miss = QAOutcome(category=2, evidence=("D1:1",), ranked=("D1:2",))
    outcomes = {0: {"a": [outcome(True), temporal_hit], "b": [outcome(True), temporal_miss], "c": [outcome(False)]}}
    spread = folds.evaluate(["defaults"], outcomes).spread()
    assert spread["2 temporal"] == {
        "folds": 2,
        "mean": 0.5,
        "worst": {"held_out": "b", "R@10": 0.0},
        "best": {"held_out": "a", "R@10": 1.0},
        "spread": 1.0,
    }
    assert spread["overall"]["worst"] == {"held_out": "c", "R@10": 0.0} and spread["overall"]["folds"] == 3
    assert folds.summary(folds.evaluate(["defaults"], outcomes), str)["fold_spread"] == spread


def test_the_protocol_table_shows_the_spread_and_a_levers_temporal_folds() -> None:
    from bench import protocol

    spread = {
        "2 temporal": {
            "folds": 2,
            "mean": 0.5,
            "worst": {"held_out": "b", "R@10": 0.0},
            "best": {"held_out": "a", "R@10": 1.0},
            "spread": 1.0,
        }
    }
    lines = protocol._spread_lines({"fold_spread": spread})
    assert "| 2 temporal | 2 | 0.500 | 0.0 (b) | 1.0 (a) | 1.000 |" in "\n".join(lines)
    assert protocol._spread_lines({}) == []
    lever = {"categories": {"2 temporal": {"mean": 0.8, "worst": 0.7}}}
    assert protocol._category_parts(lever) == ", temporal held-out mean 0.8 (worst fold 0.7)"
    lever["categories"]["1 multi-hop"] = {"mean": 0.5, "worst": 0.4}
    assert protocol._category_parts(lever) == (
        ", temporal held-out mean 0.8 (worst fold 0.7), multi-hop held-out mean 0.5 (worst fold 0.4)"
    )
    assert protocol._category_parts({}) == ""


def test_lever_grids_hold_the_defaults_once_per_value() -> None:
    from bench import protocol, study

    grids = protocol.lever_grids()
    d = study.defaults()
    assert [p.session_evidence for p in grids["session_evidence"]][::6] == list(protocol.SESSION_EVIDENCE)
    assert [p.session_spread for p in grids["session_spread"]][::6] == list(protocol.SESSION_SPREAD)
    assert [p.temporal_lift for p in grids["temporal_lift"]][::6] == list(protocol.TEMPORAL_LIFT)
    assert [p.temporal_window for p in grids["temporal_window"]][::6] == list(protocol.TEMPORAL_WINDOW)
    sizes = {"temporal_lift": len(protocol.TEMPORAL_LIFT), "temporal_window": len(protocol.TEMPORAL_WINDOW)}
    for key, points in grids.items():
        assert len(points) == len(set(points)) == 6 * sizes.get(key, 3)
        assert sum(p == d for p in points) == 1  # the shipped defaults are one of the points


def test_the_main_grid_keeps_the_defaults_of_the_levers_judged_on_their_own_grids() -> None:
    from bench import protocol, study

    d = study.defaults()
    points = protocol.grid()
    assert points[0] == d and len(points) == len(set(points)) == 768
    for p in points:
        assert (p.session_evidence, p.session_spread, p.temporal_lift, p.temporal_window, p.fts_coverage_power) == (
            d.session_evidence,
            d.session_spread,
            d.temporal_lift,
            d.temporal_window,
            d.fts_coverage_power,
        )
