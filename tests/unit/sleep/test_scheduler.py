"""Scheduler: backoff interval, failure streak, due decision and re-arm, message ids, gates."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from services.sleep.logic.schedule import (
    RunMark,
    affective_skip_reason,
    conflict_skip_reason,
    consecutive_failures,
    due_slot,
    effective_interval,
    interval_start,
    is_due,
    is_idle,
    job_is_current,
    pattern_skip_reason,
    should_abort,
    sleep_msg_id,
    slot_start,
)
from services.sleep.logic.settings import SleepSettings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ON = SleepSettings(sleep_mode_enabled=True)
BACKOFF = SleepSettings(sleep_mode_enabled=True, sleep_failure_backoff=True)


@pytest.mark.parametrize(("failures", "hours"), [(0, 8), (1, 16), (2, 24), (3, 24), (50, 24), (5000, 24)])
def test_backoff_doubles_per_failure_and_caps_at_24h(failures: int, hours: int) -> None:
    assert effective_interval(8, True, failures) == timedelta(hours=hours)


def test_backoff_cap_is_the_base_when_base_exceeds_24h() -> None:
    assert effective_interval(30, True, 0) == timedelta(hours=30)
    assert effective_interval(30, True, 1) == timedelta(hours=30)
    assert effective_interval(30, True, 7) == timedelta(hours=30)


def test_small_base_doubles_until_the_cap() -> None:
    got = [effective_interval(2, True, n) // timedelta(hours=1) for n in range(6)]
    assert got == [2, 4, 8, 16, 24, 24]


def test_without_backoff_failures_do_not_matter() -> None:
    assert effective_interval(8, False, 4) == timedelta(hours=8)


def test_negative_inputs_are_rejected() -> None:
    with pytest.raises(ValueError):
        effective_interval(8, True, -1)


def marks(*statuses: str) -> list[RunMark]:
    """Run history newest first, one hour apart; `failed:interrupted` is a killed worker's run."""
    out = []
    for i, text in enumerate(statuses):
        status, _, reason = text.partition(":")
        out.append(RunMark(status, NOW - timedelta(hours=i), reason or "manual"))
    return out


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], 0),
        (["ok"], 0),
        (["failed"], 1),
        (["failed", "failed", "ok", "failed"], 2),
        (["failed", "noop", "failed", "ok"], 1),
        (["noop", "noop"], 0),
        (["noop", "failed", "noop", "failed"], 0),
        (["failed", "aborted", "failed", "degraded", "failed"], 1),
        (["degraded", "failed"], 0),
        (["refreshed", "failed"], 0),
    ],
)
def test_only_failed_counts_and_noop_or_aborted_ends_the_streak(statuses: list[str], expected: int) -> None:
    assert consecutive_failures(marks(*statuses)) == expected


def test_runs_of_a_killed_worker_neither_count_nor_end_the_streak() -> None:
    history = marks("failed:interrupted", "failed", "failed:interrupted", "running", "failed", "ok")
    assert consecutive_failures(history) == 2


def test_an_aborted_run_does_not_hold_off_the_next_for_the_interval() -> None:
    history = marks("aborted", "failed:interrupted", "ok", "failed")
    assert interval_start(history) == NOW - timedelta(hours=2)  # the ok run
    assert slot_start(history) == NOW  # the slot still moves on: a new msg id and run id
    assert interval_start(marks("aborted")) is None and slot_start([]) is None
    decision = is_due(NOW, NOW - timedelta(minutes=6), interval_start(marks("aborted", "ok")), ON, 0)
    assert decision.due is False and decision.reason == "too_soon"  # the ok run 1 h ago still counts
    assert is_due(NOW, NOW - timedelta(minutes=6), interval_start(marks("aborted")), ON, 0).due is True


def test_idle_is_rechecked_with_the_idle_minutes() -> None:
    assert is_idle(NOW, None, 5)
    assert is_idle(NOW, NOW - timedelta(minutes=5), 5)
    assert not is_idle(NOW, NOW - timedelta(minutes=4, seconds=59), 5)


def test_never_run_never_active_is_due_now() -> None:
    decision = is_due(NOW, None, None, ON, 0)
    assert decision.due is True
    assert decision.reason == "due"
    assert decision.next_due_at == NOW


def test_due_when_idle_and_interval_elapsed_exactly() -> None:
    decision = is_due(NOW, NOW - timedelta(minutes=5), NOW - timedelta(hours=8), ON, 0)
    assert decision.due is True
    assert decision.next_due_at == NOW


def test_not_idle_rearms_at_end_of_idle_window() -> None:
    decision = is_due(NOW, NOW - timedelta(minutes=2), NOW - timedelta(hours=20), ON, 0)
    assert decision.due is False
    assert decision.reason == "not_idle"
    assert decision.next_due_at == NOW + timedelta(minutes=3)


def test_too_soon_rearms_at_last_run_plus_interval() -> None:
    last_run = NOW - timedelta(hours=7)
    decision = is_due(NOW, NOW - timedelta(hours=1), last_run, ON, 0)
    assert decision.due is False
    assert decision.reason == "too_soon"
    assert decision.next_due_at == last_run + timedelta(hours=8)


def test_backoff_pushes_next_due_out() -> None:
    last_run = NOW - timedelta(hours=10)
    plain = is_due(NOW, None, last_run, BACKOFF, 0)
    backed = is_due(NOW, None, last_run, BACKOFF, 2)
    assert plain.due is True
    assert backed.due is False
    assert backed.interval == timedelta(hours=24)
    assert backed.next_due_at == last_run + timedelta(hours=24)


def test_disabled_is_never_due_but_reports_when_it_would_be() -> None:
    decision = is_due(NOW, None, None, SleepSettings(), 0)
    assert decision.due is False
    assert decision.reason == "disabled"
    assert decision.next_due_at == NOW


def test_future_activity_from_clock_skew_is_not_idle() -> None:
    decision = is_due(NOW, NOW + timedelta(minutes=1), None, ON, 0)
    assert decision.due is False
    assert decision.next_due_at == NOW + timedelta(minutes=6)


def test_slot_and_msg_id_are_identical_for_every_scheduler() -> None:
    last_run = datetime(2026, 3, 1, 3, 4, 5, 678901, tzinfo=UTC)
    same_instant = last_run.astimezone(timezone(timedelta(hours=2)))
    assert due_slot(last_run) == due_slot(same_instant) == "20260301T030405678901Z"
    assert sleep_msg_id("key-1", due_slot(last_run)) == "sleep:key-1:20260301T030405678901Z"
    assert sleep_msg_id("key-1", due_slot(None)) == "sleep:key-1:first"


def test_slot_changes_once_a_run_is_recorded() -> None:
    first = due_slot(NOW)
    assert first != due_slot(NOW + timedelta(microseconds=1))
    assert job_is_current(first, NOW) is True
    assert job_is_current(first, NOW + timedelta(hours=9)) is False
    assert job_is_current("first", None) is True


def test_naive_time_and_empty_owner_are_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        due_slot(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="owner"):
        sleep_msg_id("", "first")


def test_activity_after_snapshot_aborts() -> None:
    assert should_abort(NOW + timedelta(seconds=1), NOW) is True
    assert should_abort(NOW, NOW) is False
    assert should_abort(None, NOW) is False


def test_phase_gates() -> None:
    assert conflict_skip_reason(False) == "no llm route"
    assert conflict_skip_reason(True) is None
    assert pattern_skip_reason(False, 500, 100) == "no llm route"
    assert pattern_skip_reason(True, 99, 100) == "fewer than 100 memories in the lookback window"
    assert pattern_skip_reason(True, 100, 100) is None
    assert affective_skip_reason(False, True, 9) == "disabled"
    assert affective_skip_reason(True, False, 9) == "no llm route"
    assert affective_skip_reason(True, True, 1) == "fewer than 2 entities"
    assert affective_skip_reason(True, True, 2) is None
