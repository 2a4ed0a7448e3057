"""Time expressions people write, read as calendar spans: hand-written cases, one rule each."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from services.retrieve.logic.temporal import Anchor, read_memory, read_question, window
from services.retrieve.logic.time_expressions import Span, absolute_spans, month_span, relative_spans, season_span

SAID = date(2024, 5, 8)  # a Wednesday
TODAY = date(2026, 3, 18)


def day(y: int, m: int, d: int) -> Span:
    return Span.day(date(y, m, d))


def days(first: date, last: date) -> Span:
    return Span(first, last + timedelta(days=1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ordinals and month-first dates, with or without "the"
        ("we met on the 3rd of june", [day(2024, 6, 3)]),
        ("we met on june 3rd", [day(2024, 6, 3)]),
        ("we met on june 3rd, 2022", [day(2022, 6, 3)]),
        # a part of a month is a third of it
        ("it was mid-june", [days(date(2024, 6, 11), date(2024, 6, 20))]),
        ("in early march we left", [days(date(2024, 3, 1), date(2024, 3, 10))]),
        ("in late february 2023", [days(date(2023, 2, 21), date(2023, 2, 28))]),
        ("by the end of may", [days(date(2024, 5, 21), date(2024, 5, 31))]),
        # numeric dates: ISO is unambiguous; a slash date is read both ways unless one is impossible
        ("booked for 2023-06-03", [day(2023, 6, 3)]),
        ("on 6/3/2023 we flew", [day(2023, 3, 6), day(2023, 6, 3)]),
        ("on 25/12/23 we ate", [day(2023, 12, 25)]),
        ("on 4/4/2023 we ate", [day(2023, 4, 4)]),
        # a season without a year is that season of the year(s) in question
        ("in the summer we sail", [season_span("summer", 2024)]),
        ("in the spring of 2022", [season_span("spring", 2022)]),
    ],
)
def test_absolute_expressions(text: str, expected: list[Span]) -> None:
    assert sorted(absolute_spans(text, (2024,))) == expected


def test_a_score_or_fraction_is_no_date() -> None:
    assert absolute_spans("we won 3/1 and ate 1/2 a pizza", (2024,)) == []
    assert absolute_spans("it was 13/13/2023", (2024,)) == []  # no month 13 either way


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "back" is "ago"
        ("two days back", day(2024, 5, 6)),
        # an approximate count spans the day either side
        ("a few days ago", days(date(2024, 5, 4), date(2024, 5, 6))),
        ("a couple of days back", days(date(2024, 5, 5), date(2024, 5, 7))),
        # a plan told with its delay, rounded as "ago" is
        ("in three days", day(2024, 5, 11)),
        ("in two weeks", days(date(2024, 5, 19), date(2024, 5, 25))),
        ("in a month", month_span(2024, 6)),
        # the unit before the previous one
        ("the week before last", days(date(2024, 4, 22), date(2024, 4, 28))),
        ("the month before last", month_span(2024, 3)),
        # the unit holding the day said, and its parts before and after that day
        ("this week is busy", days(date(2024, 5, 6), date(2024, 5, 12))),
        ("earlier this month", days(date(2024, 5, 1), date(2024, 5, 8))),
        ("later this year", Span(SAID, date(2025, 1, 1))),
        # the weekend: "over the weekend" the latest begun, "this weekend" the one of the week said
        ("over the weekend", days(date(2024, 5, 4), date(2024, 5, 5))),
        ("this weekend", days(date(2024, 5, 11), date(2024, 5, 12))),
        # seasons relative to the day said
        ("last summer", season_span("summer", 2023)),
        ("this summer", season_span("summer", 2024)),
        ("next winter", season_span("winter", 2024)),
        ("last spring", season_span("spring", 2023)),  # spring 2024 is not over on 8 May
    ],
)
def test_relative_expressions_resolve_against_the_day_said(text: str, expected: Span) -> None:
    assert relative_spans(text, SAID) == [expected]


def test_over_the_weekend_said_on_a_sunday_is_that_weekend() -> None:
    assert relative_spans("over the weekend", date(2024, 5, 12)) == [days(date(2024, 5, 11), date(2024, 5, 12))]


def test_last_winter_said_in_january_is_the_one_before_the_current() -> None:
    assert relative_spans("last winter", date(2024, 1, 15)) == [season_span("winter", 2022)]
    assert relative_spans("this winter", date(2024, 1, 15)) == [season_span("winter", 2023)]


def test_vague_expressions_are_marked_vague() -> None:
    (lately,) = read_memory("I've been busy lately", SAID).spans
    assert lately.vague and lately.end == SAID + timedelta(days=1)
    (yesterday,) = read_memory("I ran yesterday", SAID).spans
    assert not yesterday.vague


def test_a_memory_with_a_new_expression_is_read_past_the_hint_filter() -> None:
    assert read_memory("Over the weekend I ran 10k", SAID).spans == (days(date(2024, 5, 4), date(2024, 5, 5)),)
    assert read_memory("Flight on 6/3/2023", SAID).spans == (day(2023, 3, 6), day(2023, 6, 3))


@pytest.mark.parametrize(
    ("question", "before", "n_days"),
    [
        ("What did Ana do a few days after the wedding?", False, 3),
        ("What did Ana do in the two weeks after the wedding?", False, 14),
        ("What did Ana do three days before the wedding?", True, 3),
        ("What did Ana do in the days after the wedding?", False, 1),
    ],
)
def test_a_counted_window_anchors_that_many_units(question: str, before: bool, n_days: int) -> None:
    q = read_question(question, TODAY)
    assert q.anchor == Anchor(before=before, days=n_days, words=frozenset({"wedding"}))


def test_the_window_of_an_anchor_known_only_to_a_span_covers_every_day_of_it() -> None:
    week_before = Anchor(before=True, days=7, words=frozenset({"race"}))
    # the race was "last month" (some day in April): the week before any of its days
    assert window(week_before, month_span(2024, 4)) == days(date(2024, 3, 25), date(2024, 4, 29))
    two_weeks_after = Anchor(before=False, days=14, words=frozenset({"race"}))
    assert window(two_weeks_after, day(2024, 4, 10)) == days(date(2024, 4, 11), date(2024, 4, 24))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Ana do the week before 3 August 2023?", [days(date(2023, 7, 27), date(2023, 8, 2))]),
        (
            "What did Ana do two weeks before August 11, 2023 with her kids?",
            [days(date(2023, 7, 28), date(2023, 8, 10))],
        ),
        ("What did Ana do the day after 2023-06-03?", [day(2023, 6, 4)]),
        ("What did Ana watch on the Sunday before October 25, 2022?", [day(2022, 10, 23)]),
    ],
)
def test_a_window_on_a_date_needs_no_event(question: str, expected: list[Span]) -> None:
    q = read_question(question, TODAY)
    assert q.anchor is None and list(q.spans) == expected


def test_an_event_that_names_a_date_later_is_still_an_event() -> None:
    q = read_question("What did Ana do the week before the charity race in May 2023?", TODAY)
    assert q.anchor is not None and q.spans == () and {"charity", "race"} <= q.anchor.words


def test_the_weekday_before_an_event_is_that_day_of_the_week_before_it() -> None:
    sunday = Anchor(before=True, days=7, words=frozenset({"race"}), weekday=6)
    assert window(sunday, day(2024, 5, 8)) == day(2024, 5, 5)  # the race on a Wednesday
    assert window(sunday, day(2024, 5, 12)) == day(2024, 5, 5)  # on a Sunday: the one a week before
