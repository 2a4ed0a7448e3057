"""One sleep run: the run lock, the job checks, the five phases in order, the `dream_runs` row.

Serial across every replica: the durable consumer delivers one job at a time
(`max_ack_pending=1`) and the run itself holds a Postgres advisory lock, so even a job
redelivered while a slow run still works waits for it. Under the lock:

1. rows another worker left `running` (it crashed) become `failed: interrupted`;
2. a job whose run is already recorded (a redelivery after the commit), a scheduled job
   whose slot is no longer current (`logic.job_is_current`) or whose owner switched sleep
   mode off, is dropped;
3. the row goes `running` with `started_at` = the snapshot time, the phases run in order,
   each in its own error boundary (an exception fails that phase only), with
   `RunContext.checkpoint()` between phases and batches: owner activity aborts the run
   (remaining phases stay "not run"), a stopping worker requeues it;
4. status and receipt from `receipt.run_receipt`, the row is finished, SLEEP_RUNS counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import asyncpg
import msgspec
import structlog

from services.sleep.adapters import activity_kv as activity
from services.sleep.adapters import postgres as store
from services.sleep.context import Deps, RunAborted, RunContext, WorkerStopping
from services.sleep.logic.schedule import job_is_current
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
from shared.errors import ValidationFailed
from shared.observability.logging import get_logger
from shared.observability.metrics import SLEEP_RUNS
from shared.schemas.events import SleepRun

log = get_logger(__name__)

RUN_LOCK: Final = int.from_bytes(hashlib.sha256(b"memoryd-sleep-run").digest()[:8], "big", signed=True)
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


@contextlib.asynccontextmanager
async def run_lock(deps: Deps, keepalive: Keepalive) -> AsyncIterator[None]:
    """Hold the cluster-wide run lock (a session advisory lock on one pooled connection)."""
    async with deps.pool.acquire() as conn:
        while not await conn.fetchval("SELECT pg_try_advisory_lock($1)", RUN_LOCK):
            if deps.stop.is_set():
                raise WorkerStopping("sleep worker stopping while waiting for the run lock")
            await keepalive()
            await asyncio.sleep(deps.cfg.lock_poll_s)
        try:
            yield
        finally:
            with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
                await conn.execute("SELECT pg_advisory_unlock($1)", RUN_LOCK)


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
    await store.start_run(deps.pool, run_id, job.owner, job.reason)
    await store.finish_run(deps.pool, run_id, "failed", msgspec.to_builtins(details), {}, text)
    SLEEP_RUNS.labels("failed").inc()
    return "failed"


async def execute(deps: Deps, job: SleepRun, keepalive: Keepalive) -> str | None:
    """Run one job; its final status, or None when the job was dropped."""
    try:
        run_id = uuid.UUID(job.run_id)
    except ValueError:
        log.warning("sleep.bad_run_id", run_id=job.run_id)
        return None
    with structlog.contextvars.bound_contextvars(owner=job.owner, run_id=str(run_id)):
        async with run_lock(deps, keepalive):
            return await _execute_locked(deps, job, run_id, keepalive)


async def _execute_locked(deps: Deps, job: SleepRun, run_id: uuid.UUID, keepalive: Keepalive) -> str | None:
    pool = deps.pool
    if orphans := await store.fail_orphans(pool, run_id):
        log.warning("sleep.orphans_failed", count=orphans)
    row = await store.run_row(pool, run_id)
    if row is not None and (row["owner"] != job.owner or row["status"] in store.FINAL_STATUSES):
        log.info("sleep.job_dropped", why="already recorded" if row["owner"] == job.owner else "owner mismatch")
        return None
    try:
        settings = await store.sleep_settings(pool, job.owner)
    except ValidationFailed as exc:
        return await _fail_without_phases(deps, run_id, job, exc.description)
    if job.reason == "scheduled":
        history = await store.run_history(pool, job.owner, limit=1, exclude=run_id)
        last_run_at = history[0][1] if history else None
        if not settings.sleep_mode_enabled or not job_is_current(job.slot or "", last_run_at):
            log.info("sleep.job_dropped", why="stale slot or sleep mode off", slot=job.slot)
            await store.drop_queued(pool, run_id)
            return None
    snapshot_at = await store.start_run(pool, run_id, job.owner, job.reason)
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
        try:
            details, aborted, timings = await _phases(rc)
        except WorkerStopping:
            await store.requeue_run(pool, run_id)
            raise
        return await _record(rc, run_id, details, aborted, timings)
