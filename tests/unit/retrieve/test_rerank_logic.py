"""The LLM listwise rerank's pure parts: prompt, reply handling, reordering."""

from __future__ import annotations

from services.retrieve.logic.fusion import Fused
from services.retrieve.logic.rerank import label, permutation, prompt, reorder


def test_prompt_numbers_the_candidates_on_one_line_each() -> None:
    messages = prompt("what does Ana drink?", ["Ana likes\n\ntea", "x" * 1000], max_chars=100)
    assert messages[0]["role"] == "system" and "JSON" in messages[0]["content"]
    user = messages[1]["content"]
    assert user.startswith('Query: "what does Ana drink?"')
    lines = user.splitlines()
    assert '[1] "Ana likes tea"' in lines
    second = next(line for line in lines if line.startswith("[2] "))
    assert len(second) == len("[2] ") + 100 + 2 and second.endswith('…"')  # quoted


def test_permutation_keeps_valid_numbers_then_the_rest_in_fused_order() -> None:
    assert permutation(4, [4, 3, 2, 1]) == [3, 2, 1, 0]
    assert permutation(4, [2, 2, 9, 0, -1]) == [1, 0, 2, 3]  # duplicates and inventions dropped
    assert permutation(3, [3]) == [2, 0, 1]  # left-out candidates follow in their order
    assert permutation(3, []) is None
    assert permutation(3, [7, 0]) is None


def test_reorder_moves_candidates_and_keeps_scores_descending() -> None:
    head = [Fused(memory_id=m, score=s, fts_rank=i) for i, (m, s) in enumerate([("a", 0.9), ("b", 0.5), ("c", 0.1)], 1)]
    out = reorder(head, [2, 0, 1])
    assert [f.memory_id for f in out] == ["c", "a", "b"]
    assert [f.score for f in out] == [0.9, 0.5, 0.1]
    assert out[0].fts_rank == 3  # the per-source ranks stay what they were
    assert label("rerank_timeout") == "rerank->fused:rerank_timeout"
