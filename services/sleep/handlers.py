"""The sleep service's endpoints: `sleep.run`, `sleep.status` and `entities.*` RPCs and the job handler.

`sleep.run` queues a manual run (whatever `sleepModeEnabled` says: it is asked for by
hand; when the owner's sleep mode is off the reply says so in `notice`) and, with
`wait`, polls the run's row until it is final or `timeout_s` passes; the reply then
carries the run as it is (possibly still `queued`/`running`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

from memoryd.errors import NotFound, ValidationFailed
from memoryd.schemas.events import SleepRun
from memoryd.schemas.graph import EntityListRequest, EntityListResult, RelationListRequest, RelationListResult
from memoryd.schemas.ops import SleepRunRecord, SleepRunRequest, SleepRunResult, SleepStatusRequest, SleepStatusResult
from services.sleep import jobs, runner
from services.sleep.adapters import graph_read
from services.sleep.adapters import postgres as store
from services.sleep.context import Deps
from shared.bus.consumer import JobContext
from shared.db.pool import Connection

MODE_OFF = (
    "sleepModeEnabled is false for this owner: this run was queued because it was asked for by hand;"
    " no run is scheduled for it"
)
POLL_MIN_S = 0.05
POLL_MAX_S = 0.5


class SleepApi:
    def __init__(self, deps: Deps) -> None:
        self._deps = deps

    async def on_job(self, job: SleepRun, ctx: JobContext, lock_conn: Connection | None = None) -> None:
        await runner.execute(self._deps, job, ctx.in_progress, lock_conn)

    async def run(self, req: SleepRunRequest) -> SleepRunResult:
        try:
            enabled = (await store.sleep_settings(self._deps.pool, req.owner)).sleep_mode_enabled
        except ValidationFailed:
            enabled = True  # the run itself records why the stored settings are bad
        job, msg_id = jobs.manual_job(req.owner, datetime.now(UTC))
        await jobs.enqueue(self._deps.pool, self._deps.js, job, msg_id)
        record = await (self._wait(job.run_id, req.timeout_s) if req.wait else self._record(job.run_id))
        return SleepRunResult(run_id=job.run_id, queued=True, run=record, notice=None if enabled else MODE_OFF)

    async def _record(self, run_id: str) -> SleepRunRecord:
        row = await store.run_row(self._deps.pool, uuid.UUID(run_id))
        if row is None:  # dropped meanwhile (cannot happen for a manual run, kept for safety)
            raise NotFound(f"sleep run {run_id} is not recorded")
        return store.to_record(row)

    async def _wait(self, run_id: str, timeout_s: float) -> SleepRunRecord:
        deadline = time.monotonic() + timeout_s
        delay = POLL_MIN_S
        while True:
            record = await self._record(run_id)
            if record.status in store.FINAL_STATUSES or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(POLL_MAX_S, delay * 2)

    async def status(self, req: SleepStatusRequest) -> SleepStatusResult:
        return SleepStatusResult(runs=await store.list_runs(self._deps.pool, req.owner, req.limit))

    # --- the entity graph (read-only) -------------------------------------------------------
    async def entities(self, req: EntityListRequest) -> EntityListResult:
        entities, total = await graph_read.list_entities(self._deps.pool, req)
        return EntityListResult(entities=entities, total=total)

    async def relations(self, req: RelationListRequest) -> RelationListResult:
        relations, total = await graph_read.list_relations(self._deps.pool, req)
        return RelationListResult(relations=relations, total=total)
