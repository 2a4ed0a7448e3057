"""Phase 5, affective attribution (opt-in): emotion edges between entities and trait patterns.

Skipped with a reason when `sleepAffectiveEnabled` is off, without an LLM route, with
fewer than 2 entities, or with fewer than `sleepAffectiveMinPool` memories in the pool
(the pattern window: not imported, no pattern or summary memories). New traits share
`sleepMaxPatternPerRun` with the patterns discovery created in the same run. One LLM
call over the newest memories of the lookback window
(ids and sessions shown); the rules (validation against real entities and pool ids,
trait downgrade, occasion merge before the cap, traits as pattern memories, promotion)
are `affective_logic`. Edges are `entity_relations` rows with relation
`affective_context`, person -> target, and their state in `metadata` (emotion, evidence,
sessions, sessionCount, lastMergedRunId, promotedToTrait, traitSessionCount). Everything
of one run is written in one transaction.
"""

from __future__ import annotations

from services.sleep.adapters import entity_store as store
from services.sleep.adapters.pattern_store import (
    create_pattern,
    evidence_of,
    existing_patterns,
    refresh_pattern,
    window_pool,
    window_start,
)
from services.sleep.context import BatchBroken, Embed, RunContext
from services.sleep.logic.affective import AffectivePlan, attribute_affect, parse_affective_reply
from services.sleep.logic.prompts import PoolMemory, PromptEntity, affective_prompt
from services.sleep.logic.relations import Entity
from services.sleep.logic.schedule import affective_skip_reason
from services.sleep.logic.traits import ExistingTrait
from services.sleep.receipt import AffectiveResult
from shared.llm import LlmBadReply

TRAIT_PREFIX = "affect:"
NO_POOL = "no memories in the lookback window"


def small_pool(minimum: int) -> str:
    return f"fewer than {minimum} memories in the lookback window (sleepAffectiveMinPool)"


MAX_PROMPT_ENTITIES = 200


async def _prompt_entities(rc: RunContext, entities: list[Entity], pool: list[PoolMemory]) -> list[PromptEntity]:
    """Entities the pool mentions (all of them when mentions are unknown), bounded."""
    mentioned = await store.mentioned_entities(rc.pool, [m.id for m in pool])
    chosen = [e for e in entities if e.id in mentioned] if mentioned else entities
    if len(chosen) < 2:
        chosen = entities
    return [PromptEntity(id=e.id, name=e.name, kind=e.kind) for e in chosen[:MAX_PROMPT_ENTITIES]]


async def _apply(rc: RunContext, plan: AffectivePlan) -> list[Embed]:
    embeds: list[Embed] = []
    async with rc.pool.acquire() as conn, conn.transaction():
        for edge in plan.new_edges:
            meta = {
                "emotion": edge.emotion,
                "evidence": list(edge.evidence),
                "sessions": list(edge.sessions),
                "sessionCount": edge.session_count,
                "why": edge.why,
                "createdByRun": edge.run_id,
                "promotedToTrait": edge.promoted_to_trait,
                "traitSessionCount": edge.trait_session_count,
            }
            if edge.downgraded_from is not None:
                meta["downgradedFrom"] = edge.downgraded_from
            await store.insert_affective_edge(conn, rc.owner, edge.person_id, edge.target_id, meta, rc.run_id)
        for update in plan.edge_updates:
            meta = {
                "evidence": list(update.evidence),
                "sessions": list(update.sessions),
                "sessionCount": update.session_count,
                "lastMergedRunId": update.last_merged_run_id,
                "promotedToTrait": update.promoted_to_trait,
                "traitSessionCount": update.trait_session_count,
            }
            await store.update_affective_edge(conn, rc.owner, update.edge_id, meta)
        for trait in plan.trait_patterns:
            meta = {
                "title": trait.title,
                "evidence": list(trait.evidence),
                "personId": trait.person_id,
                "targetId": trait.target_id,
                "emotion": trait.emotion,
                "sessionCount": trait.session_count,
                "affective": True,
            }
            if trait.memory_id is None:
                written = await create_pattern(
                    conn, rc.owner, trait.key, trait.content, {**meta, "sleepRunId": rc.run_id}
                )
                if written is not None:
                    embeds.append((written[0], written[1], "new"))
            else:
                digest = await refresh_pattern(
                    conn, rc.owner, rc.run_id, trait.memory_id, trait.content, trait.previous_content, meta
                )
                if digest is not None:
                    embeds.append((trait.memory_id, digest, "update"))
    return embeds


async def run(rc: RunContext, result: AffectiveResult) -> None:
    settings = rc.settings
    entities = await store.owner_entities(rc.pool, rc.owner)
    result.entities = len(entities)
    skip = affective_skip_reason(settings.sleep_affective_enabled, rc.llm_route, len(entities))
    if skip is not None:
        result.status, result.reason = "skipped", skip
        return
    pool = await window_pool(rc, window_start(rc), rc.settings.sleep_affective_pool)
    if not pool or len(pool) < settings.sleep_affective_min_pool:
        result.status, result.reason = "skipped", NO_POOL if not pool else small_pool(settings.sleep_affective_min_pool)
        return
    edges = await store.affective_edges(rc.pool, rc.owner)
    traits = [
        ExistingTrait(memory_id=str(r["id"]), key=r["key"], content=r["content"], evidence=evidence_of(r["metadata"]))
        for r in await existing_patterns(rc.pool, rc.owner, TRAIT_PREFIX)
    ]
    prompt = affective_prompt(pool, await _prompt_entities(rc, entities, pool), rc.settings.sleep_prompt_chars)
    await rc.checkpoint()
    result.batches = 1
    try:
        reply = parse_affective_reply(await rc.ask("sleep.affective", prompt))
    except (BatchBroken, LlmBadReply) as exc:
        result.single_batch_failed(exc)
        return
    result.malformed = reply.malformed
    plan = attribute_affect(
        reply.candidates,
        entities,
        {m.id: m.session_id for m in pool},
        edges,
        traits,
        run_id=rc.run_id,
        trait_min_sessions=settings.sleep_affective_trait_min_sessions,
        max_relations_per_run=settings.sleep_affective_max_relations_per_run,
        max_new_traits=max(0, settings.sleep_max_pattern_per_run - int(rc.extra.get("patternsCreated", 0))),
    )
    result.add(plan.counts)
    await rc.publish_embeds(await _apply(rc, plan))
