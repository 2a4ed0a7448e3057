"""The paraphrase check end to end on a small corpus: real NATS, Postgres and services."""

from __future__ import annotations

import pytest

from bench import paraphrase, paraphrase_data
from bench.docs import replace_region
from bench.harness import ServiceStack
from memoryd.local.nats import EmbeddedNats

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_generated_paraphrases_keep_the_rule_and_are_deterministic() -> None:
    items = paraphrase_data.generate(600)
    assert items == paraphrase_data.generate(600)
    assert len({it.memory for it in items}) == 600
    for it in items:
        # a paraphrase shares at most one content word with its memory; the keyword question several
        assert len(paraphrase_data.shared_words(it.memory, it.paraphrase)) <= 1, it
        assert len(paraphrase_data.shared_words(it.memory, it.keyword)) >= 2, it
    assert paraphrase_data.generate(50, seed=1) != paraphrase_data.generate(50, seed=2)
    assert paraphrase.asked(list(range(100)), 10) == list(range(0, 100, 10))
    assert paraphrase.asked([3, 5, 8], 10) == [3, 5, 8]


def test_only_questions_with_one_answer_are_asked() -> None:
    twin = paraphrase_data.Item("Flight to Oslo on 2 May", "flight to Oslo booked", "When do I fly out to Oslo?")
    other = paraphrase_data.Item("Flight to Oslo on 9 June", "flight to Oslo", "When do I fly out to Oslo?")
    alone = paraphrase_data.Item("Ana is allergic to pho", "Who is allergic to pho?", "Who reacts to beef broth?")
    # ``other`` has a keyword question of its own, but shares its paraphrase: neither is asked
    assert paraphrase.answerable([twin, other, alone]) == [2]
    items = paraphrase_data.generate(600)
    chosen = paraphrase.answerable(items)
    assert len({items[i].paraphrase for i in chosen}) == len(chosen) > 100


async def test_paraphrase_check_end_to_end(nats_server: EmbeddedNats, pg_dsn: str) -> None:
    logs: list[str] = []
    async with ServiceStack(nats_server.url, pg_dsn, mode="inprocess") as stack:
        report = await paraphrase.run_paraphrase(stack, memories=40, questions=10, log=logs.append)
    assert report["memories"] == 40 and report["questions"] == 10
    assert report["ingest"]["memories"]["chat_turn/episodic"] == 40
    assert report["max_shared_words"] <= 1
    assert set(report["results"]) == {"hybrid", "semantic", "keyword"}
    for strategy, by_kind in report["results"].items():
        assert set(by_kind) == {"keyword", "paraphrase"}
        for s in by_kind.values():
            assert s["n"] == 10
            assert 0 <= s["top1"] <= s["top10"] <= 1
            assert s["latency_p50_ms"] > 0
        # keyword-style questions repeat the memory's words: every strategy finds most of them
        assert by_kind["keyword"]["top10"] >= 0.75, strategy
    # full text has (almost) nothing to match in a paraphrase, dense search does
    assert report["results"]["semantic"]["paraphrase"]["top10"] > report["results"]["keyword"]["paraphrase"]["top10"]
    text = paraphrase.render(report)
    assert "| hybrid | paraphrase | 10 |" in text
    assert "hybrid >= semantic-only on paraphrased questions" in text
    doc = replace_region("a\n<!-- bench:paraphrase -->\n<!-- /bench:paraphrase -->\n", "paraphrase", text)
    assert "| semantic | keyword | 10 |" in doc
    assert any("searchable after" in line for line in logs)
