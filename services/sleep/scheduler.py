"""The idle scheduler: every tick, queue a run for each owner whose run is due.

Per owner: effective sleep settings (global and owner rows), last activity from the
`MEM_ACTIVITY` bucket (reads too with `sleepCountReads`), the interval start, slot and
failure streak from the `dream_runs` history (`logic.schedule`); `logic.is_due` decides.
Owners are those with activity, memories or a settings row. Every replica may run a
scheduler: they publish the same due run under the same msg id and run id
(`jobs.scheduled_job`), so a run is booked once.
With `sleepModeEnabled=false` (the default) nothing is ever scheduled.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from memoryd.errors import MemorydError
from services.sleep import jobs
from services.sleep.adapters import postgres as store
from services.sleep.adapters.activity_kv import newer
from services.sleep.context import Deps
from services.sleep.logic.schedule import consecutive_failures, due_slot, interval_start, is_due, slot_start
from shared.observability.logging import get_logger
from shared.observability.metrics import SLEEP_FAILURE_STREAK
from shared.periodic import every

log = get_logger(__name__)


class Scheduler:
    def __init__(self, deps: Deps) -> None:
        self._deps = deps

    async def tick(self, now: datetime | None = None) -> list[str]:
        """Queue every due run now; the owners queued."""
        deps = self._deps
        now = now or datetime.now(UTC)
        global_values, owner_values = await store.settings_rows(deps.pool)
        writes, reads = await deps.activity.all() if deps.activity is not None else ({}, {})
        owners = set(writes) | await store.known_owners(deps.pool)
        queued: list[str] = []
        streak = 0
        for owner in sorted(owners):
            try:
                settings = store.settings_from_rows(global_values, owner_values.get(owner, {}), owner)
            except MemorydError as exc:
                log.warning("sleep.bad_settings", owner=owner, error=exc.description)
                continue
            if not settings.sleep_mode_enabled:
                continue
            history = await store.run_history(deps.pool, owner)
            last = writes.get(owner)
            if settings.sleep_count_reads:
                last = newer(last, reads.get(owner))
            failures = consecutive_failures(history)
            streak = max(streak, failures)
            decision = is_due(now, last, interval_start(history), settings, failures)
            if not decision.due:
                continue
            job, msg_id = jobs.scheduled_job(owner, due_slot(slot_start(history)), now)
            await jobs.enqueue(deps.pool, deps.js, job, msg_id)
            queued.append(owner)
        SLEEP_FAILURE_STREAK.set(streak)
        if queued:
            log.info("sleep.scheduled", owners=len(queued))
        return queued

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until `stop`; a failed tick is logged and retried on the next one."""
        await every(self._deps.cfg.tick_s, stop, self.tick, failed="sleep.tick_failed")
