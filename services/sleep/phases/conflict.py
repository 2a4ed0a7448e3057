"""Phase 1, conflict resolution: vector-similar pairs -> LLM batches -> plans applied per batch.

Candidates are each memory's nearest neighbours of the same owner and agent plus the backlog an
earlier scan left (imported memories take no part). A pair with a global memory goes to the
review queue (`conflict_pending`) unless a person dismissed it and neither side changed: an
owner's run never modifies a global memory. Selection and decisions are `logic.conflict_pairs|conflict_decisions`;
each batch is one LLM call whose plans (after the update cap) are applied with their ledger rows
in one transaction. In freeze mode the selected pairs go to the review queue with no LLM call.
Scans are incremental (`incremental_since`): a finished phase records `conflictScan` and keeps
every candidate it did not judge as the backlog; a full scan runs at least every `sleepFullScanDays`
and when memories with an older `updated_at` get new vectors (imports).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from services.sleep.adapters import conflict_store as db
from services.sleep.adapters.postgres import active_signature
from services.sleep.context import BatchBroken, RunContext
from services.sleep.logic.conflict_decisions import (
    FROZEN_REASON,
    batch_updated_ats,
    conflict_prompt,
    hold_decisions,
    judged_at_for_batch,
    parked_entries,
    parse_decisions,
    tally_applied,
)
from services.sleep.logic.conflict_pairs import (
    CandidatePair,
    ConflictPair,
    cross_scope_pairs,
    incremental_since,
    normalise_pair,
    same_agent,
    select_pairs,
)
from services.sleep.logic.schedule import conflict_skip_reason
from services.sleep.logic.settings import strictness_threshold
from services.sleep.phases.conflict_apply import apply_batch
from services.sleep.receipt import ConflictResult, phase_status
from shared.llm import LlmBadReply

NO_VECTORS = "no active vector signature"
CROSS_SCOPE = "cross-scope: one memory is global (an owner's run never changes it)"
Batches = Sequence[Sequence[ConflictPair]]
CANDIDATE_LIMIT = 100_000  # pairs a scan may return; a scan cut here is not complete


async def scan_since(rc: RunContext, signature: str, threshold: float) -> datetime | None:
    """Where this run's scan may start (None: a full scan), from the owner's recorded scans."""
    since = incremental_since(
        await db.complete_scans(rc.pool, rc.owner),
        now=rc.snapshot_at,
        threshold=threshold,
        full_every=timedelta(days=rc.settings.sleep_full_scan_days),
    )
    if since is not None and await db.fresh_vectors_of_old_memories(rc.pool, rc.owner, signature, since):
        return None
    return since


async def run(rc: RunContext, result: ConflictResult) -> None:
    settings = rc.settings
    freeze = settings.conflict_freeze_enabled
    skip = conflict_skip_reason(rc.llm_route, freeze)
    if skip is not None:
        result.status, result.reason = "skipped", skip
        return
    signature = await active_signature(rc.pool)
    if signature is None:
        result.status, result.reason = "skipped", NO_VECTORS
        return
    threshold = strictness_threshold(settings.sleep_conflict_strictness)
    since = await scan_since(rc, signature, threshold)
    hits = await rc.deps.pairs.neighbours(
        signature,
        rc.owner,
        min_score=threshold,
        per_memory=rc.settings.sleep_neighbours_per_memory,
        limit=CANDIDATE_LIMIT,
        since=since,
    )
    found = [CandidatePair(a, b, s) for a, b, s in hits] + await db.backlog(rc.pool, rc.owner)
    memories, global_ids = await db.pair_memories(rc.pool, rc.owner, {i for c in found for i in (c.a_id, c.b_id)})
    cross = cross_scope_pairs(found, memories, global_ids, threshold=threshold)
    dismissed = await db.reviewed_unchanged(rc.pool, rc.owner, cross)
    cross = [key for key in cross if key not in dismissed]
    result.cross_scope_pending = await db.queue_for_review(rc.pool, rc.owner, rc.run_id, cross, CROSS_SCOPE)
    candidates = [c for c in found if c.a_id != c.b_id and not {c.a_id, c.b_id} & global_ids]
    candidates = same_agent(candidates, memories)
    differentiated, ledger = await db.ledgers(
        rc.pool, rc.owner, sorted({normalise_pair(c.a_id, c.b_id) for c in candidates})
    )
    selection = select_pairs(
        candidates,
        memories,
        differentiated,
        ledger,
        threshold=threshold,
        max_pairs_per_run=settings.sleep_conflict_max_pairs_per_run,
        max_pairs_per_batch=settings.sleep_conflict_max_pairs,
    )
    result.add(selection.counts)
    later: list[ConflictPair] = list(selection.leftovers)
    if freeze:
        await park(rc, result, selection.batches)
    else:
        later += await judge(rc, result, selection.batches)
    await db.replace_backlog(rc.pool, rc.owner, later, rc.snapshot_at)
    rc.extra["conflictScan"] = {
        "since": since.isoformat() if since else None,
        "threshold": threshold,
        "complete": len(hits) < CANDIDATE_LIMIT,
    }


async def park(rc: RunContext, result: ConflictResult, batches: Batches) -> None:
    """Freeze mode: every selected pair to the review queue and the ledger, no LLM call."""
    for batch in batches:
        await rc.checkpoint()
        async with rc.pool.acquire() as conn, conn.transaction():
            judged_at = judged_at_for_batch(await db.db_clock(conn), batch_updated_ats(batch))
            keys = [pair.key for pair in batch]
            result.conflict += await db.queue_for_review(conn, rc.owner, rc.run_id, keys, FROZEN_REASON)
            entries = parked_entries(batch, judged_at)
            await db.record_reviewed(
                conn, rc.owner, [(e.a_id, e.b_id, e.judged_at, e.outcome) for e in entries], rc.run_id
            )
        result.frozen += len(batch)
        result.recorded += len(entries)
    result.status = "ok"
    result.reason = f"conflictFreezeEnabled: {result.frozen} pairs parked for review, no LLM call"


async def judge(
    rc: RunContext, result: ConflictResult, batches: Sequence[Sequence[ConflictPair]]
) -> list[ConflictPair]:
    """One LLM call per batch, its plans applied; the pairs to judge again in a later run."""
    settings = rc.settings
    later: list[ConflictPair] = []
    errors: list[str] = []
    for batch in batches:
        await rc.checkpoint()
        result.batches += 1
        sent_at = await db.db_clock(rc.pool)
        texts = await db.contents(rc.pool, rc.owner, {i for pair in batch for i in pair.key})
        try:
            prompt = conflict_prompt(batch, texts, settings.sleep_action_set)
            parsed = parse_decisions(await rc.ask("sleep.conflict", prompt), batch, settings.sleep_action_set)
        except (BatchBroken, LlmBadReply, ValueError) as exc:  # ValueError: a memory vanished meanwhile
            result.batches_failed += 1
            errors.append(str(exc))
            later.extend(batch)
            continue
        result.invalid += parsed.invalid
        result.undecided += parsed.undecided
        held = hold_decisions(parsed.decisions, updates_left=settings.reflection_update_max_per_run - result.update)
        result.update_cap_skipped += len(held.capped)
        judged_at = judged_at_for_batch(sent_at, batch_updated_ats(batch))
        applied = await apply_batch(rc, held.decisions, judged_at, unrecorded=held.capped)
        for action, count in tally_applied(held.decisions, applied.failed | held.capped).items():
            setattr(result, action, getattr(result, action) + count)
        result.apply_failed += len(applied.failed)
        result.recorded += applied.recorded
        later.extend(pair for pair in batch if pair.key in applied.failed or pair.key in held.capped)
        await rc.publish_embeds(applied.embeds)
        await rc.mirror_state(applied.archived, "archived")
    result.status = phase_status(result.batches, result.batches_failed)
    if errors:
        result.reason = f"{len(errors)} of {result.batches} LLM batches failed; last: {errors[-1]}"[:500]
    return later
