"""Temporal reasoning: the time a question asks about, the time a memory names, and the gains."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from services.retrieve.logic.fusion import Fused
from services.retrieve.logic.plan import MemoryRow, boost
from services.retrieve.logic.temporal import (
    Anchor,
    Span,
    anchor_time,
    match,
    month_span,
    read_memory,
    read_question,
    said_on,
    scale,
    temporal_gains,
    window,
)

TODAY = date(2026, 3, 18)  # a Wednesday
SAID = date(2024, 5, 8)  # a Wednesday
PREFIX = "[1:56 pm on 8 May, 2024] Ana: "


def day(y: int, m: int, d: int) -> Span:
    return Span.day(date(y, m, d))


def spans(text: str, created: date = TODAY) -> tuple[Span, ...]:
    return read_memory(text, created).spans


@pytest.mark.parametrize(
    "question",
    [
        "When did Ana go to the pottery workshop?",
        "what year did Ana move?",
        "Which month was the race?",
        "How long ago did Ana start painting?",
        "Did Ana run the race before or after the workshop?",
    ],
)
def test_a_question_asks_when_by_its_opening_or_an_order(question: str) -> None:
    q = read_question(question, TODAY)
    assert q.asks_when and q.spans == () and q.anchor is None


def test_a_question_that_asks_no_time_is_not_temporal() -> None:
    assert not read_question("What is Ana's favourite food?", TODAY).temporal
    assert not read_question("Whenever it rains, what does Ana read?", TODAY).temporal
    assert not read_question("What may Ana bring to the party?", TODAY).temporal  # "may" the verb


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Ana do in May 2023?", (month_span(2023, 5),)),
        ("What did Ana do on 8 May, 2023?", (day(2023, 5, 8),)),
        ("What did Ana do on May 8th 2023?", (day(2023, 5, 8),)),
        ("What did Ana do in 2022?", (Span(date(2022, 1, 1), date(2023, 1, 1)),)),
        ("Where did Ana go in the summer of 2021?", (Span(date(2021, 6, 1), date(2021, 9, 1)),)),
        ("What did Ana do last week?", (Span(date(2026, 3, 9), date(2026, 3, 16)),)),
        ("What did Ana eat yesterday?", (day(2026, 3, 17),)),
    ],
)
def test_a_question_names_spans_absolute_or_relative_to_today(question: str, expected: tuple[Span, ...]) -> None:
    assert read_question(question, TODAY).spans == expected


def test_a_month_without_a_year_means_that_month_of_any_recent_year() -> None:
    q = read_question("What did Ana do in June?", TODAY)
    assert month_span(2023, 6) in q.spans and month_span(2026, 6) in q.spans and len(q.spans) == 11


@pytest.mark.parametrize(
    ("question", "before", "days", "words"),
    [
        ("What did Ana do the week before the charity race?", True, 7, {"charity", "race"}),
        ("What happened the day after Ana adopted Luna?", False, 1, {"ana", "adopted", "luna"}),
        ("What did Ana do before the move to Lisbon?", True, 31, {"move", "lisbon"}),
    ],
)
def test_a_question_anchors_a_window_on_an_event(question: str, before: bool, days: int, words: set[str]) -> None:
    q = read_question(question, TODAY)
    assert q.anchor == Anchor(before=before, days=days, words=frozenset(words)) and not q.asks_when


def test_a_memory_is_said_on_its_prefix_date_else_on_its_creation_day() -> None:
    assert said_on(PREFIX + "hi", TODAY) == (SAID, "Ana: hi")
    assert said_on("[2024-05-08] Ana: hi", TODAY) == (SAID, "Ana: hi")
    assert said_on("[draft] hi", TODAY) == (TODAY, "[draft] hi")  # a bracket that is no date
    assert said_on("no prefix", TODAY) == (TODAY, "no prefix")


def test_the_prefix_date_is_no_time_the_memory_names() -> None:
    assert spans(PREFIX + "The colours blend nicely.") == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to the support group yesterday.", day(2024, 5, 7)),
        ("This morning I ran 5k.", day(2024, 5, 8)),
        ("Last night we danced.", day(2024, 5, 7)),
        ("three days ago I finished it", day(2024, 5, 5)),
        ("We adopted her two weeks ago!", Span(date(2024, 4, 21), date(2024, 4, 28))),  # +-3 days
        ("I moved two months ago", month_span(2024, 3)),
        ("last week was a blur", Span(date(2024, 4, 29), date(2024, 5, 6))),  # the previous Monday-Sunday
        ("last month I started", month_span(2024, 4)),
        ("last year was tough", Span(date(2023, 1, 1), date(2024, 1, 1))),
        ("last Friday I finished it", day(2024, 5, 3)),
        ("last Wednesday I finished it", day(2024, 5, 1)),  # said on a Wednesday: a week before
        ("on Monday we met", day(2024, 5, 6)),
        ("last weekend was fun", Span(date(2024, 5, 4), date(2024, 5, 6))),
        ("see you next week", Span(date(2024, 5, 13), date(2024, 5, 20))),
        ("next Friday is the gig", day(2024, 5, 10)),
        ("we met on 12 March", day(2024, 3, 12)),  # no year: the year it was said
        ("we met on March 12, 2022", day(2022, 3, 12)),
        ("back in 2019 I lived there", Span(date(2019, 1, 1), date(2020, 1, 1))),
        ("I started in February", month_span(2024, 2)),
    ],
)
def test_a_memory_names_times_resolved_against_the_day_it_was_said(text: str, expected: Span) -> None:
    assert spans(PREFIX + text) == (expected,)


def test_the_month_may_needs_a_preposition() -> None:
    assert spans(PREFIX + "I may go hiking") == ()
    assert spans(PREFIX + "I went hiking in May") == (month_span(2024, 5),)


def test_with_targets_a_named_time_in_them_matches_fully_a_day_said_in_them_half() -> None:
    q = read_question("What did Ana do in May 2024?", TODAY)
    targets = list(q.spans)
    assert match(q, read_memory(PREFIX + "I ran a race yesterday", TODAY), targets) == 1.0
    assert match(q, read_memory(PREFIX + "I ran a race", TODAY), targets) == 0.5
    assert match(q, read_memory(PREFIX + "I ran a race last month", TODAY), targets) == 0.0  # April
    june = "[1:00 pm on 3 June, 2024] Ana: I ran a race last month"
    assert match(q, read_memory(june, TODAY), targets) == 1.0  # said in June, names May


def test_a_when_question_matches_memories_that_name_a_time() -> None:
    q = read_question("When did Ana run the race?", TODAY)
    assert match(q, read_memory(PREFIX + "I ran the race last Friday", TODAY), []) == 1.0
    assert match(q, read_memory(PREFIX + "The race was great", TODAY), []) == 0.0


def test_the_anchor_is_the_memory_sharing_most_words_preferring_one_that_dates_it() -> None:
    anchor = Anchor(before=True, days=7, words=frozenset({"charity", "race"}))
    dated = read_memory(PREFIX + "I ran a charity race yesterday", TODAY)
    mention = read_memory("[1:00 pm on 3 June, 2024] Ana: That charity race was hard", TODAY)
    other = read_memory(PREFIX + "I baked bread", TODAY)
    found = anchor_time(anchor, {"d": (0.2, dated), "m": (0.9, mention), "o": (1.0, other)})
    assert found == ("d", day(2024, 5, 7))
    assert anchor_time(anchor, {"o": (1.0, other)}) is None
    assert window(anchor, day(2024, 5, 7)) == Span(date(2024, 4, 30), date(2024, 5, 7))
    after = Anchor(before=False, days=1, words=anchor.words)
    assert window(after, day(2024, 5, 7)) == day(2024, 5, 8)


def test_gains_lift_the_week_before_the_anchor_and_the_anchor() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    memories = {
        "anchor": (PREFIX + "I ran a charity race yesterday", created),
        "before": (PREFIX + "Last Friday I went to a pottery workshop", created),
        "long_before": (PREFIX + "I adopted a puppy in March", created),
        "mention": ("[1:00 pm on 3 June, 2024] Ana: that charity race was hard", created),
    }
    scores = {"anchor": 1.0, "before": 0.4, "long_before": 0.4, "mention": 0.8}
    out = temporal_gains(scores, memories, "What did Ana do the week before the charity race?", 0.5, TODAY)
    assert out == {"anchor": 1.5, "before": pytest.approx(0.6), "long_before": 0.4, "mention": 0.8}


def test_gains_change_nothing_for_a_question_that_asks_no_time_or_a_share_of_zero() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    memories = {"a": (PREFIX + "I ran yesterday", created)}
    assert temporal_gains({"a": 1.0}, memories, "What does Ana like?", 0.5, TODAY) == {"a": 1.0}
    assert temporal_gains({"a": 1.0}, memories, "When did Ana run?", 0.0, TODAY) == {"a": 1.0}
    assert temporal_gains({"a": 1.0}, memories, "When did Ana run?", 0.5, TODAY) == {"a": 1.5}


def test_an_anchor_nothing_matches_changes_nothing() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    memories = {"a": (PREFIX + "I ran yesterday", created)}
    assert temporal_gains({"a": 1.0}, memories, "What did Ana do after the wedding?", 0.5, TODAY) == {"a": 1.0}


def test_the_boost_uses_created_at_when_a_memory_has_no_prefix() -> None:
    def row(memory_id: str, content: str, created: datetime) -> MemoryRow:
        return MemoryRow(id=memory_id, content=content, memory_type="episodic", created_at=created)

    rows = {
        "may": row("may", "Ana ran a race", datetime(2024, 5, 20, tzinfo=UTC)),
        "june": row("june", "Ana ran a race", datetime(2024, 6, 20, tzinfo=UTC)),
    }
    ranked = [Fused(memory_id="june", score=1.0, fts_rank=1), Fused(memory_id="may", score=0.8, fts_rank=2)]
    # said in May, naming no time: half a match; 0.8 + 1.0 x 0.5 x 0.8 = 1.2
    strong = boost(ranked, rows, 0, 0, query="What did Ana do in May 2024?", reasoning_share=1.0, today=TODAY)
    assert [(f.memory_id, round(f.score, 3)) for f in strong] == [("may", 1.2), ("june", 1.0)]


def test_lift_measures_a_window_match_on_the_best_candidates_score() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    memories = {
        "anchor": (PREFIX + "I ran a charity race yesterday", created),
        "before": (PREFIX + "Last Friday I went to a pottery workshop", created),
        "long_before": (PREFIX + "I adopted a puppy in March", created),
    }
    scores = {"anchor": 1.0, "before": 0.2, "long_before": 0.4}
    question = "What did Ana do the week before the charity race?"
    own = temporal_gains(scores, memories, question, 0.5, TODAY)
    assert own == {"anchor": 1.5, "before": pytest.approx(0.3), "long_before": 0.4}
    half = temporal_gains(scores, memories, question, 0.5, TODAY, lift=0.5)
    # "before" gains 0.5 x (0.5 x 0.2 + 0.5 x 1.0) = 0.3: it passes "long_before", outside the window
    assert half == {"anchor": 1.5, "before": pytest.approx(0.5), "long_before": 0.4}
    full = temporal_gains(scores, memories, question, 0.5, TODAY, lift=1.0)
    assert full == {"anchor": 1.5, "before": pytest.approx(0.7), "long_before": 0.4}


def test_lift_leaves_a_bare_when_question_proportional_and_is_bounded() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    memories = {"a": (PREFIX + "I ran yesterday", created), "b": (PREFIX + "I like running", created)}
    scores = {"a": 0.2, "b": 1.0}
    # no time named: "a" (which says when) gains a share of its own score only
    assert temporal_gains(scores, memories, "When did Ana run?", 0.5, TODAY, lift=1.0) == {
        "a": pytest.approx(0.3),
        "b": 1.0,
    }
    assert scale(0.2, 1.0, 0.0) == 0.2 and scale(0.2, 1.0, 0.25) == pytest.approx(0.4)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="lift"):
            temporal_gains(scores, memories, "When did Ana run?", 0.5, TODAY, lift=bad)
