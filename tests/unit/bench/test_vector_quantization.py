"""The vector-quantization benchmark's pure part: the verdict against full precision and its table."""

from __future__ import annotations

from typing import Any

from bench import vector_quantization as vq


def _storage(signature: str, hybrid: float, semantic: float, table: int, vectors: int, index: int) -> dict[str, Any]:
    def scores(r10: float) -> dict[str, Any]:
        overall = {"R@5": r10 - 0.1, "R@10": r10, "R@20": r10 + 0.05, "All@10": r10 - 0.05}
        return {"scores": {"overall": overall}}

    sizes = {"table_bytes": table, "index_bytes": index, "vector_bytes": vectors, "rows": 10}
    strategies = {"hybrid": scores(hybrid), "semantic": scores(semantic)}
    return {"signature": signature, "sizes": sizes, "strategies": strategies}


def test_verdict_compares_each_strategy_with_full_precision_and_sizes() -> None:
    storages = {
        "none": _storage("s", 0.80, 0.55, 4_000, 3_000, 2_000),
        "half": _storage("s:half", 0.797, 0.544, 2_000, 1_500, 1_250),
    }
    v = vq.verdict(storages)
    assert v["drops"] == {"hybrid": 0.003, "semantic": 0.006}
    assert v["passes"] is False  # semantic lost more than the tolerance
    assert (v["table_ratio"], v["vector_ratio"], v["index_ratio"]) == (2.0, 2.0, 1.6)
    storages["half"] = _storage("s:half", 0.80, 0.546, 2_000, 1_500, 1_250)
    assert vq.verdict(storages)["passes"] is True


def test_render_sets_the_storages_side_by_side() -> None:
    storages = {
        "none": _storage("s", 0.80, 0.55, 4 * 2**20, 3_000, 2 * 2**20),
        "half": _storage("s:half", 0.80, 0.55, 2 * 2**20, 1_500, 2**20),
    }
    same = {"questions": 5, "better": 0, "worse": 0, "mean_difference": 0.0, "standard_error": 0.0}
    report = {
        "questions": 5,
        "conversations": ["conv-1"],
        "limit": 20,
        "storages": storages,
        "verdict": vq.verdict(storages),
        "per_question": {"hybrid": same, "semantic": same},
        "reindex": {"signature": "s:half", "queued": 10, "seconds": 1.5, "cpu_s": {"embed": 0.7}},
    }
    text = vq.render(report)
    assert "| `none` | `s` | 0.7000 | 0.8000 | 0.7500 | 0.4500 | 0.5500 | 4.00 | 2.00 |" in text
    assert "| `half` | `s:half` | 0.7000 | 0.8000 | 0.7500 | 0.4500 | 0.5500 | 2.00 | 1.00 |" in text
    assert "hybrid +0.0000, semantic +0.0000 (tolerance 0.005); passes: yes" in text
    assert "table 2.0x smaller" in text and "embed CPU 0.7 s" in text
