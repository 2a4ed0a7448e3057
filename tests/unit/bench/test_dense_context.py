"""The dense-context study's pure part: memory texts, vector configurations, dense lists and folds."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bench import dense_context_logic as logic
from bench import locomo, study
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.fusion import normalize_query
from services.retrieve.logic.plan import MemoryRow

A = "[1:56 pm on 8 May, 2023] Ann: I adopted a dog"
B = "[1:56 pm on 8 May, 2023] Bob: What is its name?"
C = "[1:56 pm on 8 May, 2023] Ann: Rex, after my grandfather"
D = "[2:00 pm on 9 May, 2023] Bob: New session"
FACT = "Ann has a dog"


def _memories() -> dict[str, list[logic.Memory]]:
    return {
        "conv-a": [
            logic.Memory("a", "chat_turn", "s1", A),
            logic.Memory("fact", "rule", "s1", FACT),
            logic.Memory("b", "chat_turn", "s1", B),
            logic.Memory("c", "chat_turn", "s1", C),
            logic.Memory("d", "chat_turn", "s2", D),
        ]
    }


def test_strip_prefix_only_the_leading_date_and_speaker() -> None:
    assert logic.strip_prefix(A) == "I adopted a dog"
    assert logic.strip_prefix("no prefix: here") == "no prefix: here"
    assert logic.strip_prefix(f"{A}\n{B}") == f"I adopted a dog\n{B}"


def test_memory_texts_windows_stay_in_their_session_and_skip_non_turns() -> None:
    texts = logic.memory_texts(_memories())
    assert texts["b"]["plain"] == B
    assert texts["b"]["raw"] == "What is its name?"
    assert texts["b"]["prev1"] == f"{A}\n{B}"
    assert texts["b"]["next1"] == f"{B}\n{C}"
    assert texts["b"]["win1"] == f"{A}\n{B}\n{C}"
    assert texts["a"]["win1"] == f"{A}\n{B}"
    assert texts["a"]["prev1"] == A  # nothing before the first turn of a session
    assert texts["c"]["next1"] == C  # the next session's turn is not a neighbour
    assert texts["d"]["prev1"] == D
    assert set(texts["fact"].values()) == {FACT}  # not a chat turn: always its content


def test_configurations_start_with_today_and_name_their_families() -> None:
    configs = logic.configurations()
    assert configs[0].name == "text:plain" and configs[0].family == "text:plain"
    names = {c.name for c in configs}
    assert {"text:raw", "text:next1", "text:win1", "mean:next1:0.5", "max:prev1", "max:win1"} <= names
    assert logic.Config("text", "next1").family == "text:context"
    assert logic.Config("mean", "prev1", 0.25).family == "mean:*"


def test_mean_is_normalised_and_max_keeps_the_better_cosine() -> None:
    ids = ["x", "y"]
    texts = {"x": {"plain": "px", "next1": "wx"}, "y": {"plain": "py", "next1": "wy"}}
    vectors = {"px": [1.0, 0.0], "wx": [0.0, 1.0], "py": [0.0, 1.0], "wy": [0.0, 1.0]}
    (mean,) = logic.matrices(logic.Config("mean", "next1", 0.5), ids, texts, vectors)
    assert np.allclose(np.linalg.norm(mean, axis=1), 1.0)
    assert np.allclose(mean[0], [2**-0.5, 2**-0.5])
    both = logic.matrices(logic.Config("max", "next1"), ids, texts, vectors)
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert logic.dense_list(both, ids, query, 5) == (("x", 1.0), ("y", 0.0))
    assert logic.dense_list(both, ids, query, 1) == (("x", 1.0),)


def _candidates() -> list[study.Candidates]:
    out = []
    for conv in ("conv-a", "conv-b"):
        rows = {
            i: MemoryRow(
                id=i,
                content=i,
                memory_type="episodic",
                created_at=datetime(2026, 1, 1, tzinfo=UTC),
                session_id="s1",
                turn=n,
            )
            for n, i in enumerate(("a", "b", "c"))
        }
        qa = locomo.QA(question="Whose dog is Rex?", category=4, evidence=("D1:3",))
        keyword = {"bm25": KeywordRanking([("a", 2.0)], 0.2)}
        out.append(study.Candidates(conv, qa, keyword, (), rows, {"a": "D1:1", "b": "D1:2", "c": "D1:3"}))
    return out


def test_evaluate_scores_every_configuration_and_family() -> None:
    mems = {conv: [logic.Memory(i, "chat_turn", "s1", i.upper()) for i in "abc"] for conv in ("conv-a", "conv-b")}
    texts = logic.memory_texts(mems)
    vectors = {t: [0.0, 1.0] for by_kind in texts.values() for t in by_kind.values()}
    vectors["C"] = [1.0, 0.0]  # only the evidence turn alone looks like the question
    query_vectors = {normalize_query("Whose dog is Rex?"): [1.0, 0.0]}
    configs = [logic.Config("text", "plain"), logic.Config("text", "next1"), logic.Config("text", "prev1")]
    report = logic.evaluate(_candidates(), mems, texts, vectors, query_vectors, configs=configs, log=lambda _m: None)
    plain = report["configurations"]["text:plain"]
    assert plain["dense_only"]["overall"]["R@10"] == 1.0
    assert plain["hybrid_defaults"]["overall"]["n"] == 2
    assert plain["hybrid_protocol"]["held_out_mean"]["overall"]["R@10"] == pytest.approx(1.0)
    # prev1 of "c" is "B\nC", which looks like every other memory: the evidence ties with the rest
    assert report["configurations"]["text:prev1"]["dense_only"]["overall"]["R@5"] == 1.0
    assert list(report["families"]) == ["text:context"]
    assert len(report["families"]["text:context"]["folds"]) == 2
    table = logic.render({**report, "questions": 2})
    assert "| text:next1 |" in table and "text:context (chosen:" in table
