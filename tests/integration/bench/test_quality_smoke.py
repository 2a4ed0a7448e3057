"""The quality benchmark end to end on a tiny LoCoMo-format file: real NATS, Postgres and services."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import locomo, quality
from bench.harness import ServiceStack
from memoryd.local.nats import EmbeddedNats
from tests.support.fake_llm import FakeLlm

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _turn(dia: str, speaker: str, text: str, **extra: str) -> dict[str, str]:
    return {"dia_id": dia, "speaker": speaker, "text": text, **extra}


TINY = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "I adopted a puppy and named him Rex."),
                _turn("D1:2", "Bob", "Congratulations! What breed is Rex?"),
                _turn("D1:3", "Ann", "A beagle. He loves chasing squirrels in the park."),
                _turn("D1:4", "Bob", "I started learning the violin last week.", blip_caption="a photo of a violin"),
            ],
            "session_2_date_time": "9:05 am on 2 June, 2023",
            "session_2": [
                _turn("D2:1", "Bob", "I ran the Lisbon marathon on Sunday."),
                _turn("D2:2", "Ann", "Amazing, how long did the marathon take?"),
                _turn("D2:3", "Bob", "Four hours. My knees still hurt."),
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's puppy?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "Which marathon did Bob run?", "answer": "Lisbon", "evidence": ["D2:1"], "category": 2},
            {"question": "What instrument is Bob learning?", "answer": "violin", "evidence": ["D1:4"], "category": 1},
            {"question": "What breed is Rex?", "answer": "beagle", "evidence": ["D1:2; D1:3"], "category": 4},
            {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        ],
    }
]


async def test_quality_benchmark_end_to_end(tmp_path: Path, nats_server: EmbeddedNats, pg_dsn: str) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    convs = locomo.load(path)
    logs: list[str] = []
    async with FakeLlm() as llm, ServiceStack(nats_server.url, pg_dsn, mode="inprocess") as stack:
        llm.handler = quality.keep_order
        report = await quality.run_quality(
            stack,
            convs,
            ("hybrid", "semantic", "keyword"),
            [quality.BUILTIN_VARIANTS["default"], quality.BUILTIN_VARIANTS["rrf-depth-10"]],
            data_name=path.name,
            log=logs.append,
            rerank_llm=llm,
        )
    assert report["questions"] == 4
    assert report["data"] == "tiny.json"
    assert report["ingest"]["events"] == 7
    assert report["ingest"]["memories"]["chat_turn/episodic"] == 7
    runs = {(r["variant"], r["strategy"]): r for r in report["runs"]}
    # engine variants change fused rankings only: the second one runs with hybrid alone
    assert set(runs) == {
        ("default", "hybrid"),
        ("default", "semantic"),
        ("default", "keyword"),
        ("rrf-depth-10", "hybrid"),
        (quality.RERANK_VARIANT, "hybrid"),
    }
    assert runs[("rrf-depth-10", "hybrid")]["settings"] == {"rrfDepth": 10}
    # the scripted model keeps the fused order: the answers are the defaults', one LLM call a question
    rerank = runs[(quality.RERANK_VARIANT, "hybrid")]
    assert rerank["fallbacks"] == {} and rerank["llm"]["calls"] == 4 and rerank["llm"]["questions"] == 4
    assert rerank["llm"]["candidates_mean"] == 7.0 and rerank["llm"]["prompt_tokens_mean"] > 0
    assert rerank["scores"]["overall"]["R@10"] == runs[("default", "hybrid")]["scores"]["overall"]["R@10"]
    for (_variant, strategy), run in runs.items():
        overall = run["scores"]["overall"]
        assert overall["n"] == 4
        if strategy == "keyword":
            # the embed service is stopped: hybrid degrades to full-text, and says so
            assert run["embed_down"] is True
            assert run["tiers_served"].get("pgvector", 0) == 0
            assert run["tiers_served"]["keyword"] == 4
            assert any("embed" in f for f in run["fallbacks"])
            # "name ann puppy" and "breed rex" are all in evidence turns, so full-text finds them
            # (D1:3 of the breed question shares no word with it)
            assert run["scores"]["4 single-hop"]["R@5"] >= 0.75
            assert overall["R@20"] >= 0.375
        else:
            assert run["tiers_served"].get("pgvector") == 4
            # seven turns in all: the top 20 holds every turn
            assert overall["R@20"] == 1.0
            assert overall["All@10"] == 1.0
        assert overall["tokens_top10"] > 0
        assert overall["latency_p50_ms"] > 0
    text = quality.render(report)
    assert "### hybrid — variant default" in text
    assert "| reference: BM25 | in-process | 0.539 |" in text
    assert "4 calls for 4 questions" in text
    assert any("searchable after" in line for line in logs)
    assert report["protocol"] is None  # one conversation: nothing to hold out
    assert any("protocol skipped" in line for line in logs)
