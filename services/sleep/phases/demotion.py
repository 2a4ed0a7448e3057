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

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import asyncpg

from services.sleep.context import RunContext
from services.sleep.logic.demotion import ACTIVE, SUMMARY, DemotionCandidate, DemotionPlan, demotion_plan, still_cold
from services.sleep.receipt import DemotionResult
from shared.db.memories import content_hash

_COLD = "coalesce(last_accessed_at, created_at)"
_SELECT = f"""
SELECT id, state, last_accessed_at, created_at, content, scope, {_COLD} AS cold_since FROM memories
WHERE owner = $1 AND state IN ('active', 'summary') AND source <> 'import' AND {_COLD} <= $2
  AND ({_COLD}, id) > ($3::timestamptz, $4::uuid)
ORDER BY {_COLD}, id LIMIT $5
"""
_START = (datetime(1, 1, 1, tzinfo=UTC), uuid.UUID(int=0))


async def apply_plan(rc: RunContext, plan: DemotionPlan) -> tuple[list[str], list[str], int]:
    """Apply one batch's plan with the in-transaction re-check; (summarized, archived, recalled)."""
    wanted = [uuid.UUID(s.id) for s in plan.to_summary] + [uuid.UUID(i) for i in plan.to_archive]
    if not wanted:
        return [], [], 0
    async with rc.pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            "SELECT id, state, scope, last_accessed_at FROM memories WHERE owner = $1 AND id = ANY($2::uuid[])"
            " ORDER BY id FOR UPDATE",
            rc.owner,
            wanted,
        )
        now = {str(r["id"]): r for r in rows if r["scope"] != "global"}
        ok = {i for i, r in now.items() if still_cold(r["last_accessed_at"], rc.snapshot_at)}
        recalled = len(now) - len(ok)
        summaries = [s for s in plan.to_summary if s.id in ok and now[s.id]["state"] == ACTIVE]
        archives = [i for i in plan.to_archive if i in ok and now[i]["state"] in (ACTIVE, SUMMARY)]
        if summaries:
            await conn.execute(
                "UPDATE memories m SET state = 'summary', content = u.short_text, full_content = u.original,"
                " content_hash = u.hash, updated_at = now()"
                " FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[]) AS u(id, short_text, original, hash)"
                " WHERE m.owner = $1 AND m.id = u.id AND m.state = 'active'",
                rc.owner,
                [uuid.UUID(s.id) for s in summaries],
                [s.summary for s in summaries],
                [s.full_content for s in summaries],
                [content_hash(s.summary) for s in summaries],
            )
        if archives:
            await conn.execute(
                "UPDATE memories SET state = 'archived', updated_at = now() WHERE owner = $1 AND id = ANY($2::uuid[])",
                rc.owner,
                [uuid.UUID(i) for i in archives],
            )
    return [s.id for s in summaries], archives, recalled


def _candidates(rows: Sequence[asyncpg.Record]) -> list[DemotionCandidate]:
    return [
        DemotionCandidate(
            id=str(r["id"]),
            state=r["state"],
            last_accessed_at=r["last_accessed_at"],
            created_at=r["created_at"],
            content=r["content"],
            scope=r["scope"],
        )
        for r in rows
    ]


async def run(rc: RunContext, result: DemotionResult) -> None:
    settings = rc.settings
    cutoff = rc.snapshot_at - timedelta(days=settings.sleep_archive_days)
    cursor: tuple[datetime, uuid.UUID] = _START
    while True:
        rows = await rc.pool.fetch(_SELECT, rc.owner, cutoff, cursor[0], cursor[1], rc.cfg.demotion_batch)
        if not rows:
            break
        cursor = (rows[-1]["cold_since"], rows[-1]["id"])
        plan = demotion_plan(
            _candidates(rows), rc.snapshot_at, settings.sleep_archive_days, settings.sleep_compress_days
        )
        result.add(plan.counts)
        summarized, archived, recalled = await apply_plan(rc, plan)
        result.summarized += len(summarized)
        result.archived += len(archived)
        result.recalled_skipped += recalled
        await rc.mirror_state(summarized, "summary")
        await rc.mirror_state(archived, "archived")
        if len(rows) < rc.cfg.demotion_batch:
            break
        await rc.checkpoint()
