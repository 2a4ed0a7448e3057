"""Phase 3, pattern discovery: one LLM call over the owner's recent memories -> pattern memories.

The window is the last `sleepPatternLookbackDays` of the owner's active, non-global,
non-imported memories that are neither patterns nor summaries; it needs at least
`sleepPatternMinMemories` of them. The newest
`sleepPatternPool` are shown to the LLM, and evidence is intersected with
exactly those ids (`pattern_logic.validate_patterns`). Creates and in-place refreshes
are written in one transaction.
"""

from __future__ import annotations

from services.sleep.adapters.pattern_store import (
    create_pattern,
    evidence_of,
    existing_patterns,
    refresh_pattern,
    window_pool,
    window_size,
    window_start,
)
from services.sleep.context import BatchBroken, Embed, RunContext
from services.sleep.logic.patterns import PATTERN_KEY_PREFIX, ExistingPattern, parse_pattern_reply, validate_patterns
from services.sleep.logic.prompts import pattern_prompt
from services.sleep.logic.schedule import pattern_skip_reason
from services.sleep.receipt import PatternResult
from shared.llm import LlmBadReply

NO_ROOM = "sleepMaxPatternPerRun is 0"


async def run(rc: RunContext, result: PatternResult) -> None:
    settings = rc.settings
    since = window_start(rc)
    result.pool = await window_size(rc, since)
    skip = pattern_skip_reason(rc.llm_route, result.pool, settings.sleep_pattern_min_memories)
    if skip is None and settings.sleep_max_pattern_per_run == 0:
        skip = NO_ROOM
    if skip is not None:
        result.status, result.reason = "skipped", skip
        return
    pool = await window_pool(rc, since, rc.settings.sleep_pattern_pool)
    existing = [
        ExistingPattern(
            memory_id=str(r["id"]),
            title=str((r["metadata"] or {}).get("title") or r["key"].removeprefix(PATTERN_KEY_PREFIX)),
            content=r["content"],
            evidence=evidence_of(r["metadata"]),
        )
        for r in await existing_patterns(rc.pool, rc.owner, PATTERN_KEY_PREFIX)
    ]
    prompt = pattern_prompt(
        pool, [p.title for p in existing], settings.sleep_max_pattern_per_run, rc.settings.sleep_prompt_chars
    )
    await rc.checkpoint()
    result.batches = 1
    try:
        reply = parse_pattern_reply(await rc.ask("sleep.patterns", prompt))
    except (BatchBroken, LlmBadReply) as exc:
        result.single_batch_failed(exc)
        return
    plan = validate_patterns(reply.proposals, {m.id for m in pool}, settings.sleep_max_pattern_per_run, existing)
    result.malformed = reply.malformed
    result.add(plan.counts)
    embeds: list[Embed] = []
    async with rc.pool.acquire() as conn, conn.transaction():
        for create in plan.creates:
            meta = {"title": create.title, "evidence": list(create.evidence), "sleepRunId": rc.run_id}
            written = await create_pattern(conn, rc.owner, create.key, create.content, meta)
            if written is not None:
                result.created += 1
                embeds.append((written[0], written[1], "new"))
        for refresh in plan.refreshes:
            meta = {"title": refresh.title, "evidence": list(refresh.evidence), "refreshedByRun": rc.run_id}
            digest = await refresh_pattern(
                conn, rc.owner, rc.run_id, refresh.memory_id, refresh.content, refresh.previous_content, meta
            )
            result.refreshed += 1
            if digest is not None:
                embeds.append((refresh.memory_id, digest, "update"))
    rc.extra["patternsCreated"] = result.created  # the affective phase's traits share the cap
    await rc.publish_embeds(embeds)
