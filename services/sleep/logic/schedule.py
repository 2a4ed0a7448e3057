"""Scheduler decisions of the sleep worker: when a run is due, its message id, phase gates.

Pure functions (no I/O); the phase logic lives beside this module. Only failed runs count
towards the backoff (`consecutive_failures`), and the interval counts from the newest run that
was neither aborted (the owner cut it, nothing was consolidated) nor interrupted. Several
schedulers publish the same due run with the same `Nats-Msg-Id`, naming the owner and the
*slot*: the start of the last recorded run (or `first`), read by all from the same `dream_runs`
rows. The worker drops a job whose slot is no longer current (`job_is_current`), which also
covers duplicates older than the stream's duplicate window.
"""

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

import msgspec

from services.sleep.logic.settings import SleepSettings

FAILED: Final = "failed"
ABORTED: Final = "aborted"
INTERRUPTED: Final = "interrupted"  # reason of a run closed after its worker died
OPEN_STATUSES: Final = frozenset({"queued", "running"})
BACKOFF_CAP: Final = timedelta(hours=24)
FIRST_SLOT: Final = "first"
SKIP_NO_LLM: Final = "no llm route"
SKIP_DISABLED: Final = "disabled"
SKIP_FEW_ENTITIES: Final = "fewer than 2 entities"

DueReason = Literal["due", "disabled", "not_idle", "too_soon"]


class DueDecision(msgspec.Struct, frozen=True, kw_only=True):
    """Whether an owner's run is due now, why, and when it is (or would be) due.

    `next_due_at` re-arms the scheduler: the earliest time both conditions hold (idle long
    enough, last run old enough). When due it is <= now; when disabled it is the time the
    run would be due if sleep mode were on.
    """

    due: bool
    reason: DueReason
    next_due_at: datetime
    interval: timedelta


def effective_interval(base_hours: int, backoff: bool, consecutive_failures: int) -> timedelta:
    """Base interval, or with backoff base * 2**failures capped at max(base, 24h)."""
    if base_hours < 0 or consecutive_failures < 0:
        raise ValueError("base_hours and consecutive_failures must be >= 0")
    base = timedelta(hours=base_hours)
    if not backoff or consecutive_failures == 0:
        return base
    cap_hours = max(base, BACKOFF_CAP) // timedelta(hours=1)
    return timedelta(hours=min(base_hours * 2**consecutive_failures, cap_hours))


class RunMark(msgspec.Struct, frozen=True):
    """One recorded run as the scheduler reads it: status, start, reason."""

    status: str
    started_at: datetime
    reason: str | None = None

    @property
    def interrupted(self) -> bool:
        return self.status == FAILED and self.reason == INTERRUPTED


def consecutive_failures(history_newest_first: Iterable[RunMark]) -> int:
    """Failed runs since the last finished, non-failed one: walking from the newest, `failed`
    adds one and any other finished status ends the streak; a run that is still open, or was
    `interrupted` (its worker died, the LLM route did not fail), neither counts nor ends it."""
    count = 0
    for mark in history_newest_first:
        if mark.interrupted or mark.status in OPEN_STATUSES:
            continue
        if mark.status != FAILED:
            break
        count += 1
    return count


def interval_start(history_newest_first: Iterable[RunMark]) -> datetime | None:
    """Start of the newest run the interval counts from (not aborted, not interrupted)."""
    for mark in history_newest_first:
        if mark.status != ABORTED and not mark.interrupted:
            return mark.started_at
    return None


def slot_start(history_newest_first: Sequence[RunMark]) -> datetime | None:
    """Start of the newest recorded run of any status: the slot a due run fills."""
    return history_newest_first[0].started_at if history_newest_first else None


def is_idle(now: datetime, last_activity_at: datetime | None, idle_minutes: int) -> bool:
    """The owner has been idle `idle_minutes` (re-checked when a scheduled run starts)."""
    return last_activity_at is None or now - last_activity_at >= timedelta(minutes=idle_minutes)


def is_due(
    now: datetime,
    last_activity_at: datetime | None,
    last_run_at: datetime | None,
    settings: SleepSettings,
    consecutive_failures: int,
) -> DueDecision:
    """Decide (and re-arm) one owner's run.

    Due when `now - last_activity_at >= sleepIdleMinutes` and
    `now - last_run_at >= effective_interval(...)`; a missing time satisfies its condition
    (never active / never run). `last_run_at` is `interval_start` of the run history.
    """
    interval = effective_interval(
        settings.sleep_min_interval_hours, settings.sleep_failure_backoff, consecutive_failures
    )
    idle_ready = None if last_activity_at is None else last_activity_at + timedelta(minutes=settings.sleep_idle_minutes)
    interval_ready = None if last_run_at is None else last_run_at + interval
    readies = [t for t in (idle_ready, interval_ready) if t is not None]
    next_due_at = max(readies) if readies else now
    reason: DueReason
    if not settings.sleep_mode_enabled:
        reason = "disabled"
    elif next_due_at <= now:
        reason = "due"
    elif interval_ready is not None and interval_ready == next_due_at:
        reason = "too_soon"
    else:
        reason = "not_idle"
    return DueDecision(due=reason == "due", reason=reason, next_due_at=next_due_at, interval=interval)


def due_slot(last_run_at: datetime | None) -> str:
    """The slot a due run fills: the last run's start (UTC, microseconds) or `first`."""
    if last_run_at is None:
        return FIRST_SLOT
    if last_run_at.tzinfo is None:
        raise ValueError("last_run_at must be timezone-aware")
    return last_run_at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def sleep_msg_id(owner: str, slot: str) -> str:
    """Deterministic `Nats-Msg-Id` of a due run: `sleep:<owner>:<slot>`."""
    if not owner:
        raise ValueError("owner must be non-empty")
    if not slot:
        raise ValueError("slot must be non-empty")
    return f"sleep:{owner}:{slot}"


def job_is_current(job_slot: str, last_run_at: datetime | None) -> bool:
    """True when no run was recorded since the job was published (else drop the job)."""
    return job_slot == due_slot(last_run_at)


def should_abort(last_activity_at: datetime | None, snapshot_at: datetime) -> bool:
    """Owner activity after the run's snapshot aborts the run at the next boundary."""
    return last_activity_at is not None and last_activity_at > snapshot_at


def conflict_skip_reason(llm_route: bool, freeze: bool = False) -> str | None:
    """Why conflict resolution is skipped, or None when it runs (freeze mode needs no LLM)."""
    return None if llm_route or freeze else SKIP_NO_LLM


def pattern_skip_reason(llm_route: bool, pool_size: int, min_memories: int) -> str | None:
    """Why pattern discovery is skipped: no LLM, or fewer pool memories than the minimum."""
    if not llm_route:
        return SKIP_NO_LLM
    if pool_size < min_memories:
        return f"fewer than {min_memories} memories in the lookback window"
    return None


def affective_skip_reason(enabled: bool, llm_route: bool, entity_count: int) -> str | None:
    """Why affective attribution is skipped: disabled, no LLM, or fewer than 2 entities."""
    if not enabled:
        return SKIP_DISABLED
    if not llm_route:
        return SKIP_NO_LLM
    if entity_count < 2:
        return SKIP_FEW_ENTITIES
    return None
