"""Phase 2, archival demotion (rules, no LLM): cold memories -> `summary`, colder -> `archived`.

The owner's own memories (imported ones stay as they came) not accessed since
`snapshot - sleepArchiveDays` are read in
batches (keyset over the `memories_owner_cold` index, oldest access first); the rules are
`demotion_logic.demotion_plan`. Each batch is applied in one transaction that locks the
rows and re-checks `last_accessed_at` against the run's snapshot time (`still_cold`): a
memory recalled during the run is left alone (`recalledSkipped`). A summary keeps the
original text in `full_content`, so `memory.restore` can bring it back; archived memories
keep their content (listable, restorable) and leave retrieval.
"""

from __future__ import annotations

from datetime import timedelta

from services.sleep.adapters import demotion_store as store
from services.sleep.context import RunContext
from services.sleep.logic.demotion import ACTIVE, SUMMARY, DemotionPlan, demotion_plan, still_cold
from services.sleep.receipt import DemotionResult


async def apply_plan(rc: RunContext, plan: DemotionPlan) -> tuple[list[str], list[str], int]:
    """Apply one batch's plan with the in-transaction re-check; (summarized, archived, recalled)."""
    wanted = [s.id for s in plan.to_summary] + list(plan.to_archive)
    if not wanted:
        return [], [], 0
    async with rc.pool.acquire() as conn, conn.transaction():
        now = await store.lock_own(conn, rc.owner, wanted)
        ok = {i for i, r in now.items() if still_cold(r["last_accessed_at"], rc.snapshot_at)}
        recalled = len(now) - len(ok)
        summaries = [s for s in plan.to_summary if s.id in ok and now[s.id]["state"] == ACTIVE]
        archives = [i for i in plan.to_archive if i in ok and now[i]["state"] in (ACTIVE, SUMMARY)]
        if summaries:
            await store.summarize(conn, rc.owner, summaries)
        if archives:
            await store.archive(conn, rc.owner, archives)
    return [s.id for s in summaries], archives, recalled


async def run(rc: RunContext, result: DemotionResult) -> None:
    settings = rc.settings
    cutoff = rc.snapshot_at - timedelta(days=settings.sleep_archive_days)
    cursor = store.START
    while True:
        candidates, cursor = await store.cold_batch(rc.pool, rc.owner, cutoff, cursor, rc.cfg.demotion_batch)
        if not candidates:
            break
        plan = demotion_plan(candidates, rc.snapshot_at, settings.sleep_archive_days, settings.sleep_compress_days)
        result.add(plan.counts)
        summarized, archived, recalled = await apply_plan(rc, plan)
        result.summarized += len(summarized)
        result.archived += len(archived)
        result.recalled_skipped += recalled
        await rc.mirror_state(summarized, "summary")
        await rc.mirror_state(archived, "archived")
        if len(candidates) < rc.cfg.demotion_batch:
            break
        await rc.checkpoint()
