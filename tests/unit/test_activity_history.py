"""The gateway's activity ring buffer: one sample per interval, an hour deep, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.gateway.studio.history import History
from services.gateway.studio.schemas import ActivitySample

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(minutes: float, events: int = 0) -> ActivitySample:
    return ActivitySample(at=T0 + timedelta(minutes=minutes), events=events, searches=0)


def test_keeps_the_last_hour_oldest_first() -> None:
    history = History(60.0)
    for minute in range(90):
        history.add(at(minute, events=minute * 3))
    read = history.read()
    assert read.interval_s == 60.0
    assert [s.events for s in read.samples] == [m * 3 for m in range(29, 90)]  # minutes 29..89: one hour
    assert read.samples[-1].at - read.samples[0].at == timedelta(hours=1)


def test_a_faster_interval_still_spans_at_most_an_hour() -> None:
    history = History(0.5)
    for half_second in range(20):
        history.add(at(half_second / 120))
    assert len(history.read().samples) == 20
    history.add(at(61))
    assert [s.at for s in history.read().samples] == [T0 + timedelta(minutes=61)]


def test_a_clock_step_back_keeps_the_series_ordered() -> None:
    history = History(60.0)
    history.add(at(5, events=10))
    history.add(at(4, events=11))
    history.add(at(6, events=12))
    assert [s.events for s in history.read().samples] == [10, 12]
