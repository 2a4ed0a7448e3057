"""BM25's pure parts: inverse document frequency, the score, lexemes and frequency estimates."""

from __future__ import annotations

import math

import pytest

from services.retrieve.logic.bm25 import (
    K1,
    KeywordRanking,
    cover_of,
    estimated_frequencies,
    idf,
    score,
)
from services.retrieve.logic.lexemes import TermStats, plain_lexemes, unquoted_lexemes


def test_rare_words_weigh_more_and_every_weight_is_positive() -> None:
    assert idf(600, 2) > idf(600, 50) > idf(600, 590) > 0
    assert idf(600, 600) > 0  # a word in every memory still counts a little
    assert idf(10, 40) > 0  # a frequency above N (global matches) is clamped, never negative
    assert idf(600, 2) == pytest.approx(math.log(1 + 598.5 / 2.5))


def test_the_score_saturates_with_term_frequency() -> None:
    one, two, ten = (score(600, [5], [tf]) for tf in (1, 2, 10))
    assert one < two < ten < one * (K1 + 1)  # more occurrences help, never beyond k1 + 1 times
    assert one == pytest.approx(idf(600, 5))  # one occurrence scores the plain idf
    assert score(600, [5, 300], [1, 1]) == pytest.approx(idf(600, 5) + idf(600, 300))


def test_a_rare_word_outranks_a_common_word_said_twice() -> None:
    # 'caroline' is in most of her memories; 'research' in a few
    assert score(432, [4], [1]) > score(432, [339], [2])


def test_unquoted_lexemes_reads_every_operator() -> None:
    assert unquoted_lexemes("'carolin' & 'research'") == ["carolin", "research"]
    assert unquoted_lexemes("'self-portrait' <-> 'self' <-> 'portrait' & 'carolin'") == [
        "self-portrait",
        "self",
        "portrait",
        "carolin",
    ]
    assert unquoted_lexemes("'it''s' & !'work' & 'it''s'") == ["it's", "work"]
    assert unquoted_lexemes("") == []


def test_estimated_frequencies_follow_the_planner_statistics() -> None:
    stats = TermStats(
        rows=100_000, lexeme_freq={"'work'": 0.2}, rare_lexeme_freq=0.0001, owner_freq={"big": 0.5}, other_owner_freq=0
    )
    documents, freqs = estimated_frequencies(["work", "kestrel", "it's"], stats, "big")
    assert documents == 50_000
    assert freqs == pytest.approx([10_000, 5, 5])


def test_the_cover_is_on_ts_rank_cd_scale() -> None:
    assert cover_of(3) == pytest.approx(0.3)
    assert cover_of(None) == 0.0
    assert KeywordRanking.by_cover_density([("a", 0.2), ("b", 0.1)]).cover == 0.2
    assert KeywordRanking.by_cover_density([]).cover == 0.0


def test_plain_lexemes_are_the_any_word_query_of_exactly_the_questions_lexemes() -> None:
    assert plain_lexemes("'tea' & 'kyoto'", ["kyoto", "tea", "tea"]) == ("kyoto", "tea")
    assert plain_lexemes("'it''s' & 'tea'", ["it's", "tea"]) == ("it's", "tea")
    assert plain_lexemes("'tea' & !'coffe'", ["tea", "coffe"]) is None  # a negation
    assert plain_lexemes("'green' <-> 'tea'", ["green", "tea"]) is None  # a phrase
    assert plain_lexemes("'tea'", ["tea", "kyoto"]) is None  # the query names fewer lexemes
