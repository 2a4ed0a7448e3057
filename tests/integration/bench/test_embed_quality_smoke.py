"""The embedding-variant study end to end on a tiny LoCoMo file and a small paraphrase corpus:
real NATS, Postgres and services collect once, both model variants embed in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import embed_quality, locomo
from bench.docs import replace_region
from tests.integration.bench.test_quality_smoke import TINY

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_embed_quality_scores_both_variants_and_reproduces_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    convs = locomo.load(path)
    logs: list[str] = []
    report = embed_quality.run(convs, tmp_path / "cache", logs.append, data_name=path.name, memories=40, questions=5)
    assert (report["questions"], report["paraphrase"]["questions"]) == (4, 10)
    assert report["ingest"]["memories"]["chat_turn/episodic"] == 7 + 40
    variants = report["variants"]
    assert variants["float"]["signature"] == "local:all-MiniLM-L6-v2:384"
    assert variants["dynamic-int8"]["signature"] == "local:all-MiniLM-L6-v2:384:dynamic-int8"
    # the float model ranked in-process gives what the engine's own pgvector lists gave
    assert variants["float"]["locomo"]["hybrid"]["overall"]["R@10"] == report["pgvector_check"]["hybrid_R@10"]
    assert variants["float"]["locomo"]["semantic"]["R@10"] == report["pgvector_check"]["semantic_R@10"]
    for v in variants.values():
        assert v["cpu_ms_per_text"] > 0
        assert v["locomo"]["hybrid"]["overall"]["R@10"] >= 0.75  # the tiny questions repeat their turn's words
        by_conversation = v["locomo"]["hybrid_R@10_by_conversation"]
        assert set(by_conversation) == {c.sample_id for c in convs}  # the paraphrase owner is not one
        for kind in ("keyword", "paraphrase"):
            assert v["paraphrase"]["hybrid"][kind]["n"] == 5
        assert v["paraphrase"]["hybrid"]["keyword"]["top10"] >= 0.8
    assert 0.9 < report["cosine_to_float"]["min"] <= report["cosine_to_float"]["mean"] < 1.0
    assert report["per_question"]["questions"] == 4
    assert set(report["verdict"]["drops"]) == set(embed_quality.TOLERANCE)
    text = embed_quality.render(report)
    assert "| dynamic-int8 | `local:all-MiniLM-L6-v2:384:dynamic-int8` |" in text
    doc = replace_region("<!-- bench:embed-quality -->\n<!-- /bench:embed-quality -->\n", "embed-quality", text)
    assert "| float | `local:all-MiniLM-L6-v2:384` |" in doc
    # a second run reads what the first collected and scores the same
    again = embed_quality.run(convs, tmp_path / "cache", logs.append, data_name=path.name, memories=40, questions=5)
    assert again["variants"]["dynamic-int8"]["locomo"] == variants["dynamic-int8"]["locomo"]
    assert any("read from" in line for line in logs)
