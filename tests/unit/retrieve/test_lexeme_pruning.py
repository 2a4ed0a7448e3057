"""Keyword-match pruning for large owners: which lexemes stay in the match, from planner statistics."""

from __future__ import annotations

from services.retrieve.adapters.postgres_stats import snapshot
from services.retrieve.logic.lexemes import (
    EMPTY_STATS,
    MAX_WIDENING,
    NEAR_MAX_LEXEMES,
    WIDEN_BELOW,
    TermStats,
    and_lexemes,
    keyword_plan,
    match_plan,
    quoted,
    widen_again,
)

STATS = TermStats(
    rows=100_000,
    lexeme_freq={"'work'": 0.2, "'book'": 0.2, "'flight'": 0.1, "'lisbon'": 0.004},
    rare_lexeme_freq=0.001,
    owner_freq={"big": 0.9},
    other_owner_freq=0.0001,  # 10 rows
)


def test_and_lexemes_reads_only_plain_conjunctions() -> None:
    assert and_lexemes("'flight' & 'farmer' & 'market'") == ["'flight'", "'farmer'", "'market'"]
    assert and_lexemes("'it''s' & 'ok' & 'ok'") == ["'it''s'", "'ok'"]
    assert and_lexemes("'new' <-> 'york' & 'trip'") is None  # phrase
    assert and_lexemes("'a' & !'b'") is None  # negation
    assert and_lexemes("'a' | 'b'") is None
    assert and_lexemes("") is None


def test_small_owner_matches_any_word() -> None:
    plan = match_plan(["'work'", "'book'", "'lisbon'"], STATS, "small", budget=1000)
    assert plan.match == plan.rank == "'work' | 'book' | 'lisbon'"
    assert plan.pruned == ()


def test_large_owner_keeps_every_word_and_the_rare_ones_within_budget() -> None:
    # big owner: 90,000 rows; expected matches: lisbon 360, unknown 'kyoto' 90, flight 9,000, work 18,000
    plan = match_plan(["'work'", "'flight'", "'lisbon'", "'kyoto'"], STATS, "big", budget=1000)
    assert plan.match == "( 'work' & 'flight' & 'lisbon' & 'kyoto' ) | 'kyoto' | 'lisbon'"
    assert plan.rank == "'work' | 'flight' | 'lisbon' | 'kyoto'"  # every word still scores
    assert plan.pruned == ("'work'", "'flight'")
    # the best-ranked matches (every word) are a candidate set of their own, never cut by the cap
    assert plan.best == ("( 'work' & 'flight' & 'lisbon' & 'kyoto' )",)


def test_large_owner_with_only_common_words_matches_all_of_them() -> None:
    plan = match_plan(["'work'", "'book'"], STATS, "big", budget=1000)
    assert plan.match == "( 'work' & 'book' )"
    assert plan.pruned == ("'work'", "'book'")
    assert plan.best == ()  # the match is the every-word set: not read twice


def test_a_widened_plan_adds_the_every_word_but_one_set_then_the_rarest_words_left_out() -> None:
    words = ["'work'", "'flight'", "'lisbon'", "'kyoto'"]
    plan = match_plan(words, STATS, "big", budget=1000, widen=1)
    assert plan.near == (
        "( 'flight' & 'lisbon' & 'kyoto' ) | ( 'work' & 'lisbon' & 'kyoto' )"
        " | ( 'work' & 'flight' & 'kyoto' ) | ( 'work' & 'flight' & 'lisbon' )"
    )
    assert plan.sets == (*plan.best, plan.near)
    assert plan.match == "( 'work' & 'flight' & 'lisbon' & 'kyoto' ) | 'kyoto' | 'lisbon'"  # no word added yet
    plan = match_plan(words, STATS, "big", budget=1000, widen=2)
    assert plan.match.endswith("| 'kyoto' | 'lisbon' | 'flight'") and plan.pruned == ("'work'",)
    plan = match_plan(words, STATS, "big", budget=1000, widen=3)
    assert plan.match == plan.rank and plan.pruned == ()  # every word: the widest plan
    assert plan.best == ("( 'work' & 'flight' & 'lisbon' & 'kyoto' )",)  # still never cut by the cap
    # two words: no every-word-but-one set (a single word); each step adds a word
    two = match_plan(["'work'", "'book'"], STATS, "big", budget=1000, widen=1)
    assert two.near == "" and two.pruned == ("'work'",) and two.match == "( 'work' & 'book' ) | 'book'"
    two = match_plan(["'work'", "'book'"], STATS, "big", budget=1000, widen=2)
    assert two.pruned == () and two.match == "'work' | 'book'"
    # a long question widens by words only (the set would repeat n - 1 words n times)
    many = [quoted(f"w{i}") for i in range(NEAR_MAX_LEXEMES + 1)]
    long = match_plan(many, STATS, "big", budget=100, widen=1)
    assert long.near == "" and len(long.pruned) == len(match_plan(many, STATS, "big", budget=100).pruned) - 1


def test_widening_stops_with_enough_matches_at_the_widest_plan_or_after_max_steps() -> None:
    pruned = match_plan(["'work'", "'book'"], STATS, "big", budget=1000)
    widest = match_plan(["'work'", "'book'"], STATS, "big", budget=1000, widen=2)
    assert widen_again(pruned, WIDEN_BELOW - 1, WIDEN_BELOW, 0)
    assert not widen_again(pruned, WIDEN_BELOW, WIDEN_BELOW, 0)
    assert not widen_again(pruned, 0, 0, 0)  # widening off
    assert not widen_again(widest, 0, WIDEN_BELOW, 2)
    assert not widen_again(pruned, 0, WIDEN_BELOW, MAX_WIDENING)


def test_one_word_is_never_pruned() -> None:
    plan = match_plan(["'work'"], STATS, "big", budget=10)
    assert plan.match == plan.rank == "'work'"


def test_snapshot_reads_pg_stats_rows() -> None:
    lexemes = {"elems": ["work", "it's"], "freqs": [0.2, 0.01, 0.01, 0.2, 0.0]}  # then min, max, nulls
    owners = {"vals": ["big"], "freqs": [0.5], "n_distinct": -0.00005}  # 5 distinct owners of 100k rows
    stats = snapshot(100_000, lexemes, owners)
    assert stats.lexeme_freq == {"'work'": 0.2, quoted("it's"): 0.01}
    assert quoted("it's") == "'it''s'"
    assert stats.rare_lexeme_freq == 0.005
    assert stats.owner_rows("big") == 50_000
    assert stats.owner_rows("other") == 100_000 * 0.5 / 4  # the rest spread over the other 4 owners
    assert stats.expected_matches("'work'", 50_000) == 10_000


def test_snapshot_before_analyze_prunes_nothing() -> None:
    assert snapshot(0, None, None) is EMPTY_STATS
    assert snapshot(100.0, None, {"vals": None, "freqs": None, "n_distinct": 1}) is EMPTY_STATS
    plan = match_plan(["'work'", "'book'"], EMPTY_STATS, "anyone", budget=1)
    assert plan.match == plan.rank


def test_keyword_plan_from_the_tsquery_text() -> None:
    assert keyword_plan("", STATS, "small", 1000) is None  # only stop words: nothing to match
    plan = keyword_plan("'flight' & 'lisbon'", STATS, "small", 1000)
    assert plan is not None and plan.match == plan.rank == "'flight' | 'lisbon'"
    negated = keyword_plan("'work' & !'lisbon'", STATS, "big", 1000)
    assert negated is not None and negated.match == negated.rank == "'work' & !'lisbon'"  # AND NOT kept
    phrase = keyword_plan("'new' <-> 'york' & 'trip'", STATS, "big", 1000)
    assert phrase is not None and phrase.match == "'new' <-> 'york' | 'trip'"
    off = keyword_plan("'work' & 'book'", STATS, "big", 0)  # budget 0: never pruned
    assert off is not None and off.match == "'work' | 'book'"
    pruned = keyword_plan("'work' & 'book'", STATS, "big", 1000)
    assert pruned is not None and pruned.match == "( 'work' & 'book' )"
