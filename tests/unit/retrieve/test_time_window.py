"""Time-window candidates: the asked spans, their ``created_at`` ranges, the picks and the index's filter."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime

from services.retrieve.logic.keyword_index import Doc, OwnerIndex, View
from services.retrieve.logic.temporal import Span
from services.retrieve.logic.time_window import (
    asked_ranges,
    asked_spans,
    extra,
    names_time,
    ranges_us,
    stored_within,
    window_lists,
)

TODAY = date(2024, 3, 10)
DAY_US = 86_400_000_000


def _us(d: date) -> int:
    return (d - date(1970, 1, 1)).days * DAY_US


def test_a_named_month_is_asked_in_every_recent_year_or_the_one_named() -> None:
    spans = asked_spans("What did Mel do in May 2023?", TODAY, {}, {})
    assert spans == (Span(date(2023, 5, 1), date(2023, 6, 1)),)
    bare = asked_spans("What did Mel do in May?", TODAY, {}, {})
    assert Span(date(2023, 5, 1), date(2023, 6, 1)) in bare and len(bare) == 11  # this year and ten before


def test_a_question_naming_no_time_asks_no_span() -> None:
    assert not names_time("When did Mel adopt the dog?", TODAY)
    assert names_time("What did Mel do in May?", TODAY) and names_time(
        "What did Jon do the week before the race?", TODAY
    )
    assert asked_spans("When did Mel adopt the dog?", TODAY, {}, {}) == ()
    assert asked_spans("What does Mel like to cook?", TODAY, {}, {}) == ()


def test_the_week_before_an_anchor_is_placed_on_the_memory_that_dates_it() -> None:
    memories = {
        "a": ("I adopted the dog yesterday!", date(2023, 8, 4)),  # the adoption: 3 August
        "b": ("The dog is lovely.", date(2023, 9, 1)),
    }
    spans = asked_spans("What did Jon do the week before he adopted the dog?", TODAY, {"a": 1.0, "b": 2.0}, memories)
    assert spans == (Span(date(2023, 7, 27), date(2023, 8, 3)),)


def test_an_anchor_found_in_no_candidate_asks_nothing() -> None:
    memories = {"b": ("I like tea.", date(2023, 9, 1))}
    assert asked_spans("What did Jon do the week before he adopted the dog?", TODAY, {"b": 1.0}, memories) == ()


def test_ranges_are_utc_days_merged_when_they_touch() -> None:
    spans = [Span(date(2023, 5, 1), date(2023, 6, 1)), Span(date(2023, 6, 1), date(2023, 6, 3)),
             Span(date(2022, 5, 1), date(2022, 6, 1))]  # fmt: skip
    assert ranges_us(spans) == [
        (_us(date(2022, 5, 1)), _us(date(2022, 6, 1))),
        (_us(date(2023, 5, 1)), _us(date(2023, 6, 3))),
    ]
    assert ranges_us([]) == []


def test_stored_within_reads_datetimes_and_microseconds_alike() -> None:
    ranges = ranges_us([Span(date(2023, 5, 1), date(2023, 6, 1))])
    assert stored_within(datetime(2023, 5, 31, 23, 59, tzinfo=UTC), ranges)
    assert not stored_within(datetime(2023, 6, 1, tzinfo=UTC), ranges)  # the end is exclusive
    assert stored_within(_us(date(2023, 5, 1)), ranges)
    assert not stored_within(_us(date(2023, 5, 1)) - 1, ranges)


def test_extra_skips_the_candidates_already_present_and_stops_at_the_cap() -> None:
    within = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0)]
    assert extra(within, {"a", "c"}, 5) == [("b", 8.0), ("d", 6.0)]
    assert extra(within, {"a"}, 1) == [("b", 8.0)]
    assert extra(within, set(), 0) == []


def test_window_lists_put_the_picks_below_the_keyword_lists_top() -> None:
    keyword = [("x", 5.0), ("y", 4.0), ("z", 3.0)]
    vector = [("v", 0.9), ("w", 0.8), ("u", 0.7)]
    lists = window_lists({"fts": keyword, "vec": vector}, 2, [("p", 1.0)])
    assert lists["fts"] == [("x", 5.0), ("y", 4.0), ("p", 1.0)]
    assert lists["vec"] == [("v", 0.9), ("w", 0.8)]  # the other lists keep their top
    assert window_lists({"vec": vector}, 2, [("p", 1.0)])["fts"] == [("p", 1.0)]


def _doc(i: int, day: date, **tf: int) -> Doc:
    return Doc(uuid.UUID(int=i), _us(day), list(tf), list(tf.values()))


def test_search_within_ranks_as_search_among_the_memories_stored_in_the_ranges() -> None:
    docs = [
        _doc(1, date(2023, 5, 2), mel=1, pottery=1),
        _doc(2, date(2023, 4, 30), mel=2, pottery=1),  # the best match, stored before May
        _doc(3, date(2023, 5, 20), mel=1),
        _doc(4, date(2023, 5, 21), cake=1),  # in May, but shares no word with the question
        _doc(5, date(2023, 6, 1), mel=1),  # the first day after May
    ]
    index = OwnerIndex(docs)
    view = View(now_us=_us(date(2024, 1, 1)), created_after_us=0)
    everything, _ = index.search(["mel", "pottery"], 10, view)
    may = ranges_us([Span(date(2023, 5, 1), date(2023, 6, 1))])
    within = index.search_within(["mel", "pottery"], 10, view, may)
    assert [h.id for h in within] == [str(uuid.UUID(int=i)) for i in (1, 3)]
    scores = {h.id: h.score for h in everything}
    assert all(h.score == scores[h.id] for h in within)  # BM25 over every memory, not only May's
    # one word: memories 1 and 3 tie, and a tie goes to the newest, as in ``search``
    assert [h.id for h in index.search_within(["mel"], 1, view, may)] == [str(uuid.UUID(int=3))]
    assert index.search_within(["mel", "pottery"], 10, view, []) == []
    assert index.search_within(["zebra"], 10, view, may) == []


def test_a_searchs_kept_matches_give_the_window_without_scoring_again_until_a_write() -> None:
    docs = [_doc(1, date(2023, 5, 2), mel=1), _doc(2, date(2023, 4, 2), mel=3), _doc(3, date(2023, 5, 9), mel=2)]
    index = OwnerIndex(docs)
    view = View(now_us=_us(date(2024, 1, 1)), created_after_us=0)
    may = ranges_us([Span(date(2023, 5, 1), date(2023, 6, 1))])
    hits, occurrences, matches = index.search_keeping(["mel"], 1, view)
    assert (hits, occurrences) == index.search(["mel"], 1, view)
    assert matches is not None
    assert index.top_within(matches, 5, may) == index.search_within(["mel"], 5, view, may)
    assert [h.id for h in index.top_within(matches, 5, may) or []] == [str(uuid.UUID(int=i)) for i in (3, 1)]
    assert index.top_within(matches, 5, []) == []
    index.append(_doc(4, date(2023, 5, 3), mel=1))
    assert index.top_within(matches, 5, may) is None  # written since: the caller scores again
    assert index.search_keeping(["zebra"], 5, view) == ([], 0, None)


class _Unread(dict[str, object]):
    def items(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the candidates' rows were read for a question naming no time")


def test_asked_ranges_are_the_asked_spans_as_ranges_and_read_no_row_for_a_question_naming_no_time() -> None:
    assert asked_ranges("What did Mel do in May 2023?", TODAY, [], {}) == ranges_us(
        asked_spans("What did Mel do in May 2023?", TODAY, {}, {})
    )
    assert asked_ranges("When did Mel adopt the dog?", TODAY, [], _Unread()) == []  # type: ignore[arg-type]
