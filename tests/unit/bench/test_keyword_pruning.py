"""The keyword-pruning benchmark's pure parts: recall against exact BM25 with ties, and its tables."""

from __future__ import annotations

from typing import Any

from bench.keyword_pruning import recall, render

EXACT = [("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 1.0), ("e", 0.5)]


def test_recall_counts_any_memory_tied_with_the_last_place() -> None:
    assert recall(EXACT, [("a", 3.0), ("b", 2.0), ("c", 1.0)], k=3) == 1.0
    # d ties c for third place: either one is the exact top 3
    assert recall(EXACT, [("a", 3.0), ("b", 2.0), ("d", 1.0)], k=3) == 1.0
    # e scores below the third place
    assert recall(EXACT, [("a", 3.0), ("b", 2.0), ("e", 0.5)], k=3) == 2 / 3
    assert recall(EXACT, [("c", 1.0), ("d", 1.0)], k=2) == 0.0
    assert recall([], [], k=10) == 1.0
    assert recall([], [("a", 1.0)], k=10) == 0.0
    # fewer matches than k: the share of them found
    assert recall(EXACT[:2], [("a", 3.0)], k=10) == 0.5


def _report() -> dict[str, Any]:
    design = {
        "pg_cpu_ms": 4.25,
        "backend_cpu_ms": 4.0,
        "py_cpu_ms": 0.5,
        "p50_ms": 9.5,
        "p99_ms": 30.0,
        "recall_at_10": 1.0,
        "exact_top10": 200,
        "same_ids_in_order": 190,
        "same_cover": 199,
    }
    read = {
        f"{k}_{p}": 7.0
        for k in ("essential", "non_essential", "candidates", "scored", "seeds", "at_threshold")
        for p in ("p50", "p90")
    }
    return {
        "environment": {"cpus": 2, "load_average_1m_5m_15m": [1.0, 1.0, 1.0]},
        "rounds": 2,
        "corpora": [
            {
                "memories": 100_000,
                "questions": 200,
                "designs": {
                    "exact statement": {**design, "pg_cpu_ms": 42.5},
                    "statement (defaults)": {**design, "pg_cpu_ms": 2.125},
                    "postings, pair seed": design,
                    "postings, sample seed": {**design, "pg_cpu_ms": 5.0},
                    "in-process index": {**design, "pg_cpu_ms": 0.25, "py_cpu_ms": 1.125},
                },
                "inproc": {
                    "build": {
                        "memories": 100_000,
                        "postings": 1_000_000,
                        "lexemes": 20_000,
                        "read_wall_s": 3.0,
                        "read_pg_cpu_s": 1.0,
                        "read_py_cpu_s": 1.5,
                        "index_py_cpu_s": 0.75,
                        "bytes": {"postings": 5_000_000, "memories": 2_500_000, "scratch": 1_250_000, "traced": 1.1e7},
                    },
                    "question_call": {"pg_cpu_ms": 0.25, "py_cpu_ms": 0.3, "not_plain": 0},
                    "scoring": {"cpu_ms": 0.8, "p50_ms": 0.7, "p99_ms": 2.0},
                    "writes": {
                        "n": 1000,
                        "append_us": 6.5,
                        "delete_us": 90.0,
                        "scoring_dirty_cpu_ms": 0.9,
                        "compact_ms": 120.0,
                    },
                    "fallbacks": 1,
                },
                "matches": {"p50": 12_000, "p90": 15_000},
                "read": {"pair": {**read, "no_threshold": 0}},
            }
        ],
        "write": {f"{w}_{k}": 1.5 for w in ("insert_ms", "copy_ms_per_1k", "delete_ms_per_1k") for k in ("on", "off")},
    }


def test_render_puts_each_figure_in_its_column() -> None:
    text = render(_report())
    assert (
        "| 100,000 | postings, pair seed | 4.25 | 4.00 | 0.50 | 4.75 | 9.50 | 30.00 | 1.00 | 200/200 | 199/200 |"
        in text
    )
    assert "| 100,000 | 1000000 | 20000 | 3.00 | 1.00 | 1.50 | 0.75 | 5.00 | 3.75 | 8.75 | 11.00 |" in text
    assert "| 100,000 | 0.25 | 0.30 | 0.70 | 0.80 | 2.00 | 6.50 | 90.00 | 0.90 | 120.00 | 1/200 |" in text
    assert (
        "100,000 memories: the in-process index spends 0.25 ms of PostgreSQL CPU and 1.12 ms in the searching"
        " process per search (1.38 ms, 0.52x the statement (defaults)' 2.62 ms) at recall@10 1.000; its scoring"
        " alone 0.80 ms, the question's lexemes 0.55 ms."
    ) in text
    assert "| 100,000 | pair | 12000 | 15000 | 7 | 7 | 7 | 7 | 7 | 7 | 7 | 7 | 0 |" in text
    assert "| on | 1.50 | 1.50 | 1.50 |" in text
    assert (
        "100,000 memories: the cheapest pruned design, postings, pair seed, spends 4.25 ms of PostgreSQL CPU per"
        " search (0.10x the exact statement's, 2.00x the statement (defaults)'s) at recall@10 1.000."
    ) in text
