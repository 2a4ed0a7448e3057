"""Token estimates: one definition, used by retrieval budgets, memory lists, compaction and the
LLM client when an endpoint reports no usage. ``ceil(len / 4)`` unless a tokenizer is
configured (docs/design.md "Retrieval engine")."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: 0 for "", at least 1 for any non-empty text."""
    return -(-len(text) // 4)
