"""One sleep run: the owner's run lock, the job checks, the five phases in order, the `dream_runs` row.

Never two runs of one owner, across replicas and restarts: the run holds the owner's Postgres
advisory lock (`owner_lock`, taken without waiting; a busy owner's job is requeued as
`OwnerBusy`); how many owners run at once is `lanes`' business. Under the lock: rows a killed
worker left `running` become `failed: interrupted`; a job already recorded, whose slot is no
longer current (`logic.job_is_current`), whose owner turned sleep off or is no longer idle is
dropped; otherwise the phases run in order, each in its own error boundary, with
`RunContext.checkpoint()` between phases and batches (owner activity aborts the run, cancelling
an LLM call in flight; a stopping worker requeues it); status and receipt come from
`receipt.run_receipt`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final

import asyncpg
import msgspec
import structlog

from memoryd.errors import DependencyDown, ValidationFailed
from memoryd.schemas.events import SleepRun
from services.sleep.adapters import activity_kv as activity
from services.sleep.adapters import postgres as store
from services.sleep.context import Deps, RunAborted, RunContext, WorkerStopping
from services.sleep.logic.schedule import is_idle, job_is_current, slot_start
from services.sleep.logic.settings import SleepSettings
from services.sleep.phases import affective, conflict, demotion, patterns, relations
from services.sleep.receipt import (
    AffectiveResult,
    ConflictResult,
    DemotionResult,
    PatternResult,
    RelationResult,
    RunDetails,
    receipt,
    run_counters,
    run_receipt,
)
from shared.db.advisory import try_advisory_lock
from shared.observability.logging import get_logger
from shared.observability.metrics import SLEEP_RUNS

log = get_logger(__name__)

Keepalive = Callable[[], Awaitable[None]]
PhaseFn = Callable[[RunContext, Any], Awaitable[None]]
PHASES: Final[tuple[tuple[str, type[Any], PhaseFn], ...]] = (
    ("conflict_resolution", ConflictResult, conflict.run),
    ("archival_demotion", DemotionResult, demotion.run),
    ("pattern_discovery", PatternResult, patterns.run),
    ("relation_completion", RelationResult, relations.run),
    ("affective_attribution", AffectiveResult, affective.run),
)
MAX_REASON = 500
WORKER: Final = f"{socket.gethostname()}:{os.getpid()}"  # `counters.worker` of the runs this process runs


class OwnerBusy(DependencyDown):
    """Another run of this owner is in progress somewhere: the job goes back to the queue."""

    def __init__(self, description: str, retry_after_s: float) -> None:
        super().__init__(description)
        self.retry_after_s = retry_after_s


def owner_lock_key(owner: str) -> int:
    """The advisory lock key of one owner's runs (64 bits of sha256)."""
    return int.from_bytes(hashlib.sha256(b"memoryd-sleep-owner:" + owner.encode()).digest()[:8], "big", signed=True)


@contextlib.asynccontextmanager
async def owner_lock(conn: asyncpg.Connection, owner: str, retry_after_s: float) -> AsyncIterator[None]:
    """Hold the owner's run lock on `conn` (a session lock: it dies with the connection)."""
    async with try_advisory_lock(conn, owner_lock_key(owner)) as taken:
        if not taken:
            raise OwnerBusy(f"a sleep run of {owner!r} is in progress: requeued", retry_after_s)
        yield


@contextlib.asynccontextmanager
async def _lock_connection(deps: Deps, conn: asyncpg.Connection | None) -> AsyncIterator[asyncpg.Connection]:
    if conn is not None:
        yield conn
        return
    async with deps.pool.acquire() as own:
        yield own


async def _phases(rc: RunContext) -> tuple[RunDetails, bool, dict[str, float]]:
    details = RunDetails()
    timings: dict[str, float] = {}
    for name, result_type, phase in PHASES:
        result = result_type()
        setattr(details, name, result)
        started = time.perf_counter()
        try:
            await rc.checkpoint()
            await phase(rc, result)
        except RunAborted as exc:
            result.status, result.reason = "aborted", str(exc)[:MAX_REASON]
            return details, True, timings
        except WorkerStopping:
            raise
        except Exception as exc:
            log.error("sleep.phase_failed", phase=name, exc_info=exc)
            result.status, result.reason = "failed", f"{type(exc).__name__}: {exc}"[:MAX_REASON]
        finally:
            timings[name] = round((time.perf_counter() - started) * 1000, 1)
    return details, False, timings


async def _record(
    rc: RunContext, run_id: uuid.UUID, details: RunDetails, aborted: bool, timings: dict[str, float]
) -> str:
    status, text = run_receipt(str(run_id), details, aborted)
    counters = msgspec.to_builtins(run_counters(details.phases()))
    counters.update(rc.extra)
    counters.update(llmPromptTokens=rc.prompt_tokens, llmCompletionTokens=rc.completion_tokens, phaseMs=timings)
    await store.finish_run(rc.pool, run_id, status, msgspec.to_builtins(details), counters, text)
    SLEEP_RUNS.labels(status).inc()
    log.info("sleep.run_finished", status=status, receipt=text)
    return status


async def _fail_without_phases(deps: Deps, run_id: uuid.UUID, job: SleepRun, why: str) -> str:
    """A run that cannot start its phases (bad stored settings) is still recorded, as failed."""
    details = RunDetails()
    for phase in details.phases():
        phase.reason = why[:MAX_REASON]
    text = receipt(str(run_id), "failed", details, 0, 0, False)
    await store.start_run(deps.pool, run_id, job.owner, job.reason, WORKER)
    await store.finish_run(deps.pool, run_id, "failed", msgspec.to_builtins(details), {"worker": WORKER}, text)
    SLEEP_RUNS.labels("failed").inc()
    return "failed"


async def execute(
    deps: Deps, job: SleepRun, keepalive: Keepalive, lock_conn: asyncpg.Connection | None = None
) -> str | None:
    """Run one job; its final status, or None when the job was dropped. OwnerBusy: requeue it."""
    try:
        run_id = uuid.UUID(job.run_id)
    except ValueError:
        log.warning("sleep.bad_run_id", run_id=job.run_id)
        return None
    with structlog.contextvars.bound_contextvars(owner=job.owner, run_id=str(run_id)):
        async with _lock_connection(deps, lock_conn) as conn, owner_lock(conn, job.owner, deps.cfg.requeue_s):
            return await _execute_locked(deps, job, run_id, keepalive)


async def _still_wanted(deps: Deps, job: SleepRun, run_id: uuid.UUID, settings: SleepSettings) -> str | None:
    """Why a scheduled job is dropped at its start, or None when it runs."""
    history = await store.run_history(deps.pool, job.owner, limit=1, exclude=run_id)
    if not settings.sleep_mode_enabled:
        return "sleep mode off"
    if not job_is_current(job.slot or "", slot_start(history)):
        return "stale slot"
    last = await deps.activity.last(job.owner, reads=settings.sleep_count_reads) if deps.activity else None
    if not is_idle(datetime.now(UTC), last, settings.sleep_idle_minutes):
        return "owner active since the run was queued"
    return None


async def _execute_locked(deps: Deps, job: SleepRun, run_id: uuid.UUID, keepalive: Keepalive) -> str | None:
    pool = deps.pool
    if orphans := await store.fail_orphans(pool, job.owner, run_id):
        log.warning("sleep.orphans_failed", count=orphans)
    row = await store.run_row(pool, run_id)
    if row is not None and (row["owner"] != job.owner or row["status"] in store.FINAL_STATUSES):
        log.info("sleep.job_dropped", why="already recorded" if row["owner"] == job.owner else "owner mismatch")
        return None
    try:
        settings = await store.sleep_settings(pool, job.owner)
    except ValidationFailed as exc:
        return await _fail_without_phases(deps, run_id, job, exc.description)
    if job.reason == "scheduled" and (why := await _still_wanted(deps, job, run_id, settings)) is not None:
        log.info("sleep.job_dropped", why=why, slot=job.slot)
        await store.drop_queued(pool, run_id)
        return None
    snapshot_at = await store.start_run(pool, run_id, job.owner, job.reason, WORKER)
    if snapshot_at is None:
        return None
    async with activity.watch(deps.nc, job.owner) as live:
        rc = RunContext(
            deps=deps,
            run_id=str(run_id),
            owner=job.owner,
            snapshot_at=snapshot_at,
            settings=settings,
            live=live,
            keepalive=keepalive,
        )
        rc.extra["worker"] = WORKER
        try:
            details, aborted, timings = await _phases(rc)
        except WorkerStopping:
            await store.requeue_run(pool, run_id)
            raise
        return await _record(rc, run_id, details, aborted, timings)
