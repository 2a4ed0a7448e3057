"""LoCoMo parsing, turn text, evidence cleaning and the recall metrics on a hand-made conversation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.locomo import (
    LocomoFormatError,
    QAOutcome,
    all_at,
    clean_evidence,
    format_turn,
    load,
    parse_date,
    parse_sample,
    percentile,
    recall_at,
    score,
    score_by_category,
)

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Cute!", "blip_caption": "a photo of a dog"},
        ],
        "session_2_date_time": "9:05 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": " I ran a marathon. "},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Wow, how long did it take?"},
        ],
    },
    "qa": [
        {"question": "What is the puppy's name?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
        {"question": "When did Bob run?", "answer": "June", "evidence": ["D2:1; D02:02"], "category": 2},
        {"question": "Who has a dog?", "answer": "Ann", "evidence": ["D:1:1", "D", "D9:9"], "category": 1},
        {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
        {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
    ],
}


def test_parse_date_and_format() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("12:48 am on 1 February, 2023") == datetime(2023, 2, 1, 0, 48, tzinfo=UTC)
    with pytest.raises(LocomoFormatError, match="session date"):
        parse_date("yesterday")
    assert format_turn("1:56 pm on 8 May, 2023", "Ann", " hi ") == "[1:56 pm on 8 May, 2023] Ann: hi"
    assert format_turn("d", "Bob", "Cute!", "a dog") == "[d] Bob: Cute! [shares a photo: a dog]"


def test_clean_evidence() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D1:5"}
    assert clean_evidence(["D8:6; D9:17"], known) == ("D8:6", "D9:17")
    assert clean_evidence(["D:11:26"], known) == ("D11:26",)
    assert clean_evidence(["D01:05", "D1:5", "D"], known) == ("D1:5",)
    assert clean_evidence(["D3:3", "x1:5"], known) == ()


def test_parse_sample() -> None:
    conv = parse_sample(SAMPLE)
    assert conv.sample_id == "conv-x"
    assert conv.speakers == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert conv.turns[1].content == "[1:56 pm on 8 May, 2023] Bob: Cute! [shares a photo: a photo of a dog]"
    assert conv.turns[2].content == "[9:05 am on 2 June, 2023] Bob: I ran a marathon."
    assert conv.turns[1].occurred_at == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
    assert (conv.turns[3].session, conv.turns[3].index) == (2, 1)
    assert [(q.category, q.evidence) for q in conv.qas] == [(4, ("D1:1",)), (2, ("D2:1", "D2:2")), (1, ("D1:1",))]
    assert conv.dropped_qas == 1  # the category-3 question without evidence; category 5 is skipped


def test_load(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps([SAMPLE]))
    assert [c.sample_id for c in load(path)] == ["conv-x"]
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(LocomoFormatError, match="list"):
        load(path)
    path.write_text(json.dumps([{"sample_id": "s", "qa": []}]))
    with pytest.raises(LocomoFormatError, match="sample s"):
        load(path)


def test_recall_and_all() -> None:
    ranked = ("D1:1", None, "D2:1", "D1:1", "D3:3")
    assert recall_at(ranked, ("D1:1", "D2:1"), 2) == 0.5
    assert recall_at(ranked, ("D1:1", "D2:1"), 3) == 1.0
    assert recall_at(ranked, ("D9:9",), 5) == 0.0
    assert all_at(ranked, ("D1:1", "D2:1"), 3) is True
    assert all_at(ranked, ("D1:1", "D2:1"), 2) is False
    with pytest.raises(ValueError, match="without evidence"):
        recall_at(ranked, (), 5)


def test_percentile() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
    assert percentile([7.0], 99) == 7.0


def test_score_by_category() -> None:
    outcomes = [
        QAOutcome(category=4, evidence=("a",), ranked=("a", "b"), latency_ms=1.0, tokens_top10=10),
        QAOutcome(category=4, evidence=("a", "b"), ranked=("x",) * 5 + ("a",) + ("y",) * 10 + ("b",), latency_ms=3.0),
        QAOutcome(category=2, evidence=("c",), ranked=(), latency_ms=2.0, tokens_top10=20),
    ]
    table = score_by_category(outcomes)
    assert list(table) == ["overall", "2 temporal", "4 single-hop"]
    single = table["4 single-hop"]
    assert single.n == 2
    assert single.recall == {5: pytest.approx(0.5), 10: pytest.approx(0.75), 20: pytest.approx(1.0)}
    assert single.all_at == 0.5
    overall = table["overall"]
    assert overall.recall[10] == pytest.approx((1 + 0.5 + 0) / 3)
    assert overall.all_at == pytest.approx(1 / 3)
    assert overall.latency_p50_ms == 2.0
    assert overall.tokens_top10 == pytest.approx(10.0)
    assert overall.as_dict()["R@10"] == 0.5
    assert score([]).n == 0
