"""How the keyword tier scores its matches: BM25 over the owner's memories (pure parts).

``ts_rank_cd`` gives every occurrence of a question word the same 0.1, so a word most of an
owner's memories hold (a speaker's name, "work") outweighs a rare one the question is really
about. BM25 weighs each question lexeme by its inverse document frequency among the owner's
memories, with term-frequency saturation ``K1`` and no length normalisation (``b`` = 0: chat
memories are short; on the LoCoMo dev split b 0.1, 0.4 and 0.75 scored within 0.005 of it).

The tier computes the score in SQL (``adapters.postgres.keyword_search``); this module holds
what it is computed from:

- an owner within the match budget has every match of every question lexeme in the candidate
  set, so document frequencies are counted among the matches, exactly, and ``N`` is the
  owner's number of visible memories (one index count of at most the budget's rows);
- a larger owner's candidate set is pruned and capped, so a lexeme's count among the matches
  can fall short: its frequency is at least the planner statistics' estimate
  (``estimated_frequencies``) and ``N`` is the statistics' estimate of the owner's rows.

The coverage of the question (``coverage.keyword_weight``) is still read on ``ts_rank_cd``'s
scale: ``KeywordRanking.cover`` is 0.1 x the most question-word occurrences any match holds,
which is what ``ts_rank_cd`` of the any-word query gives the best-covering match.
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
