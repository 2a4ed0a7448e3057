"""How the keyword tier scores its matches: BM25 over the owner's memories (pure parts).

Each question lexeme is weighed by its inverse document frequency among the owner's memories,
with saturation ``K1`` and no length normalisation (``b`` = 0: chat memories are short). The
SQL (``adapters.postgres.keyword_search``) computes the score; this module holds its inputs: an
owner within the match budget has every match in the candidate set, so frequencies are counted
exactly and ``N`` is its number of visible memories; a larger owner's set is pruned and capped,
so a frequency is at least the planner statistics' estimate (``estimated_frequencies``) and ``N``
is their estimate of the owner's rows. The question's coverage is still read on ``ts_rank_cd``'s
scale (``KeywordRanking.cover``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from services.retrieve.logic.coverage import RANK_PER_WORD
from services.retrieve.logic.lexemes import TermStats, quoted

#: term-frequency saturation (LoCoMo dev, in-process, b = 0, ftsWeight 0.5: hybrid R@10 0.7895-0.7901 for k1 0.9-2.0)
K1 = 1.2
#: the keyword tier's two scorings (the runtime setting ``keywordRanking``)
KeywordScoring = Literal["bm25", "cover_density"]
KEYWORD_SCORINGS: tuple[KeywordScoring, ...] = ("bm25", "cover_density")


@dataclass(frozen=True)
class KeywordRanking:
    """The keyword tier's answer: ``ranked`` (memory id, score) best first, and ``cover``, the
    best-covering match's score on ``ts_rank_cd``'s scale (0.1 per occurrence of a question word;
    0 without a match), which the coverage weighting reads whatever the scoring."""

    ranked: list[tuple[str, float]]
    cover: float

    @classmethod
    def by_cover_density(cls, ranked: list[tuple[str, float]]) -> KeywordRanking:
        """A ``ts_rank_cd`` ranking: its best score is the cover."""
        return cls(ranked, ranked[0][1] if ranked else 0.0)


NO_MATCH = KeywordRanking([], 0.0)


def cover_of(occurrences: float | None) -> float:
    """``KeywordRanking.cover`` from the most question-word occurrences a match holds."""
    return RANK_PER_WORD * float(occurrences or 0)


def idf(documents: float, frequency: float) -> float:
    """BM25's inverse document frequency (the ``+ 1`` keeps it positive for any frequency);
    the SQL of the keyword tier computes the same expression."""
    n = max(documents, frequency)
    return math.log(1 + (n - frequency + 0.5) / (frequency + 0.5))


def score(documents: float, frequencies: Sequence[float], tfs: Sequence[int], k1: float = K1) -> float:
    """One memory's BM25 score from each of its question lexemes' document frequency and its
    count in the memory (the reference the SQL is tested against)."""
    return math.fsum(idf(documents, f) * tf * (k1 + 1) / (tf + k1) for f, tf in zip(frequencies, tfs, strict=True))


def estimated_frequencies(lexemes: Sequence[str], stats: TermStats, owner: str) -> tuple[float, list[float]]:
    """``N`` and each (unquoted) lexeme's document frequency for ``owner`` from the planner
    statistics (the floor a large owner's counts among its pruned, capped matches are raised to)."""
    owner_rows = stats.owner_rows(owner)
    return owner_rows, [stats.expected_matches(quoted(lex), owner_rows) for lex in lexemes]
