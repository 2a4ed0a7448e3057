"""The keyword list's weight from how much of the question its best match covers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.retrieve.logic.coverage import RANK_PER_WORD, STOPWORDS, content_words, coverage, keyword_weight


def test_stop_words_are_postgres_english_list() -> None:
    assert len(STOPWORDS) == 127
    assert {"when", "did", "i", "the", "s", "don"} <= STOPWORDS
    assert "caroline" not in STOPWORDS


def test_content_words_drop_stop_words_and_repeats() -> None:
    assert content_words("When did Caroline's group go to the group?") == 3  # caroline, group, go
    assert content_words("When do I fly out to Tallinn?") == 2  # fly, tallinn
    assert content_words("Who is it?") == 0
    assert content_words("") == 0


def test_coverage_is_the_raw_rank_over_a_full_match() -> None:
    query = "When do I fly out to Tallinn?"  # 2 content words: a full match ranks 0.2
    assert coverage(0.1, query) == pytest.approx(0.5)
    assert coverage(0.2, query) == pytest.approx(1.0)
    assert coverage(0.7, query) == 1.0  # repeated words: capped
    assert coverage(0.0, query) == 0.0
    assert coverage(math.nan, query) == 0.0
    assert coverage(0.3, "Who is it?") == 1.0  # no word counted here: a match is not judged


def test_weight_is_whole_above_full_coverage_and_falls_below_it() -> None:
    query = "Which engineer repaired the kestrel release?"  # engineer, repaired, kestrel, release
    full = 4 * RANK_PER_WORD
    assert keyword_weight(0.5, full, query, 0.7, 3.0) == 0.5
    assert keyword_weight(0.5, 0.3, query, 0.7, 3.0) == 0.5  # 0.75 >= 0.7
    # one word of four: (0.25 / 0.7) ** 3 of the weight
    assert keyword_weight(0.5, 0.1, query, 0.7, 3.0) == pytest.approx(0.5 * (0.25 / 0.7) ** 3)
    assert keyword_weight(0.5, 0.1, query, 0.7, 1.0) == pytest.approx(0.5 * 0.25 / 0.7)
    assert keyword_weight(0.5, 0.0, query, 0.7, 3.0) == 0.0
    assert keyword_weight(0.5, 0.1, query, 0.7, 0.0) == 0.5  # power 0: no fall


def test_full_coverage_zero_turns_it_off() -> None:
    assert keyword_weight(0.5, 0.0, "anything at all", 0.0, 3.0) == 0.5
    assert keyword_weight(0.5, math.nan, "anything at all", 0.0, 3.0) == 0.5


@pytest.mark.parametrize(("full_at", "power"), [(-0.1, 3.0), (1.5, 3.0), (math.nan, 3.0), (0.5, -1.0), (0.5, math.inf)])
def test_bad_parameters_are_rejected(full_at: float, power: float) -> None:
    with pytest.raises(ValueError):
        keyword_weight(0.5, 0.1, "a query", full_at, power)


@given(
    top=st.floats(min_value=0, max_value=5, allow_nan=False),
    more=st.floats(min_value=0, max_value=5, allow_nan=False),
    full_at=st.floats(min_value=0.01, max_value=1),
    power=st.floats(min_value=0, max_value=8),
)
def test_weight_never_exceeds_the_setting_and_grows_with_the_match(
    top: float, more: float, full_at: float, power: float
) -> None:
    query = "Which engineer repaired the kestrel release?"
    low = keyword_weight(0.5, top, query, full_at, power)
    high = keyword_weight(0.5, top + more, query, full_at, power)
    assert 0.0 <= low <= high <= 0.5
