"""Pure parts of ``bench peers``: keyword queries from a memory, sources, ratios and targets, mem0's DSN."""

from __future__ import annotations

from bench import peers, synth
from bench.paraphrase_data import STOPWORDS
from bench.peers_mem0 import database_dsn


def test_keyword_query_is_content_words_of_the_first_sentence_in_order() -> None:
    text = "Remember that Nadia is allergic to ramen and does not eat pizza. Flight to Oslo on 3 May."
    content = ["Remember", "Nadia", "allergic", "ramen", "eat", "pizza"]  # first sentence, no stopwords
    words = peers.keyword_query(text, seed=1).split()
    assert len(words) == peers.KEYWORDS and words == [w for w in content if w in words]
    short = "I bought a tent for the camping trip to Lisbon."
    assert peers.keyword_query(short, seed=3) == "bought tent camping trip Lisbon"
    for i, memory in enumerate(synth.sentences(200)):
        words = peers.keyword_query(memory, seed=i).split()
        assert 1 <= len(words) <= peers.KEYWORDS
        assert not any(w.lower() in STOPWORDS or w.isdigit() for w in words)
        assert all(w in memory for w in words)
        assert peers.keyword_query(memory, seed=i) == " ".join(words)  # deterministic


def test_sources_spread_evenly_and_never_more_than_the_memories() -> None:
    assert peers.sources(1000, 4) == [0, 250, 500, 750]
    assert peers.sources(3, 10) == [0, 1, 2]


def test_ratios_are_memoryd_over_mem0_and_targets_compare_them() -> None:
    memoryd = {"search_p50_ms": 4.0, "qps_c16": 400.0, "add_to_searchable_per_s": 300.0, "hit_rate": 0.9}
    mem0 = {"search_p50_ms": 16.0, "qps_c16": 50.0, "add_to_searchable_per_s": 60.0, "hit_rate": 0.9}
    ratios = peers.compare(memoryd, mem0)
    assert ratios == {"search_p50_ms": 0.25, "qps_c16": 8.0, "add_to_searchable_per_s": 5.0, "hit_rate": 1.0}
    met = {t["target"]: t["ok"] for t in peers.targets(ratios)}
    assert met == {
        "memoryd/mem0 search_p50_ms <= 0.6": True,
        "memoryd/mem0 search_p99_ms <= 1": False,  # not measured: never met
        "memoryd/mem0 cold_p50_ms <= 0.8": False,
        "memoryd/mem0 qps_c16 >= 2": True,
        "memoryd/mem0 add_to_searchable_per_s >= 1.5": True,
        "memoryd/mem0 hit_rate >= 1.2": False,
    }
    assert peers.compare({"qps_c16": 1.0}, {"qps_c16": 0.0}) == {"qps_c16": None}
    assert [t["ok"] for t in peers.targets({})] == [False] * len(peers.TARGETS)


def test_the_cpu_target_follows_the_owner_size() -> None:
    def cpu(memories: int, ms: float) -> tuple[str, bool]:
        row = peers.targets({}, memories, ms)[-1]
        return row["target"], row["ok"]

    assert cpu(10_000, 3.9) == ("memoryd CPU ms per search, c=1 <= 4", True)
    assert cpu(10_000, 4.5) == ("memoryd CPU ms per search, c=1 <= 4", False)
    assert cpu(100_000, 4.5) == ("memoryd CPU ms per search, c=1 <= 5", True)
    assert cpu(1_000_000, 5.5)[1] is False
    assert len(peers.targets({}, 10_000, None)) == len(peers.TARGETS)


def test_mem0_database_is_on_the_same_server() -> None:
    assert database_dsn("postgresql://postgres@127.0.0.1:5999/memoryd") == "postgresql://postgres@127.0.0.1:5999/mem0"
    assert database_dsn("postgresql://u:p@h:1/x?sslmode=disable", "m") == "postgresql://u:p@h:1/m?sslmode=disable"
