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

import uuid
from typing import Any

import asyncpg

from services.sleep.adapters.entity_store import AFFECTIVE, owner_entities
from services.sleep.adapters.pattern_store import (
    create_pattern,
    evidence_of,
    existing_patterns,
    refresh_pattern,
    window_pool,
    window_start,
)
from services.sleep.context import BatchBroken, Embed, RunContext
from services.sleep.logic.affective import AffectiveEdge, AffectivePlan, attribute_affect, parse_affective_reply
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


def _edge(row: asyncpg.Record) -> AffectiveEdge:
    meta: dict[str, Any] = row["metadata"] or {}
    return AffectiveEdge(
        edge_id=str(row["id"]),
        person_id=str(row["source_id"]),
        target_id=str(row["target_id"]),
        emotion=str(meta.get("emotion") or ""),
        evidence=tuple(str(e) for e in meta.get("evidence") or ()),
        sessions=tuple(str(s) for s in meta.get("sessions") or ()),
        promoted_to_trait=bool(meta.get("promotedToTrait", False)),
        trait_session_count=int(meta.get("traitSessionCount") or 0),
        last_merged_run_id=meta.get("lastMergedRunId"),
    )


async def _prompt_entities(rc: RunContext, entities: list[Entity], pool: list[PoolMemory]) -> list[PromptEntity]:
    """Entities the pool mentions (all of them when mentions are unknown), bounded."""
    mentioned = {
        str(r["entity_id"])
        for r in await rc.pool.fetch(
            "SELECT DISTINCT entity_id FROM entity_mentions WHERE memory_id = ANY($1::uuid[])",
            [uuid.UUID(m.id) for m in pool],
        )
    }
    chosen = [e for e in entities if e.id in mentioned] if mentioned else entities
    if len(chosen) < 2:
        chosen = entities
    return [PromptEntity(id=e.id, name=e.name, kind=e.kind) for e in chosen[:MAX_PROMPT_ENTITIES]]


async def _apply(rc: RunContext, plan: AffectivePlan) -> list[Embed]:
    embeds: list[Embed] = []
    run_id = uuid.UUID(rc.run_id)
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
            await conn.execute(
                "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata, run_id)"
                " VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)",
                uuid.uuid4(),
                rc.owner,
                uuid.UUID(edge.person_id),
                uuid.UUID(edge.target_id),
                AFFECTIVE,
                meta,
                run_id,
            )
        for update in plan.edge_updates:
            meta = {
                "evidence": list(update.evidence),
                "sessions": list(update.sessions),
                "sessionCount": update.session_count,
                "lastMergedRunId": update.last_merged_run_id,
                "promotedToTrait": update.promoted_to_trait,
                "traitSessionCount": update.trait_session_count,
            }
            await conn.execute(
                "UPDATE entity_relations SET metadata = metadata || $3::jsonb, updated_at = now()"
                " WHERE owner = $1 AND id = $2 AND relation = 'affective_context'",
                rc.owner,
                uuid.UUID(update.edge_id),
                meta,
            )
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
    entities = await owner_entities(rc.pool, rc.owner)
    result.entities = len(entities)
    skip = affective_skip_reason(settings.sleep_affective_enabled, rc.llm_route, len(entities))
    if skip is not None:
        result.status, result.reason = "skipped", skip
        return
    pool = await window_pool(rc, window_start(rc), rc.cfg.affective_pool)
    if not pool or len(pool) < settings.sleep_affective_min_pool:
        result.status, result.reason = "skipped", NO_POOL if not pool else small_pool(settings.sleep_affective_min_pool)
        return
    edge_rows = await rc.pool.fetch(
        "SELECT id, source_id, target_id, metadata FROM entity_relations WHERE owner = $1 AND relation = $2",
        rc.owner,
        AFFECTIVE,
    )
    traits = [
        ExistingTrait(memory_id=str(r["id"]), key=r["key"], content=r["content"], evidence=evidence_of(r["metadata"]))
        for r in await existing_patterns(rc.pool, rc.owner, TRAIT_PREFIX)
    ]
    prompt = affective_prompt(pool, await _prompt_entities(rc, entities, pool), rc.cfg.prompt_chars)
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
        [_edge(r) for r in edge_rows],
        traits,
        run_id=rc.run_id,
        trait_min_sessions=settings.sleep_affective_trait_min_sessions,
        max_relations_per_run=settings.sleep_affective_max_relations_per_run,
        max_new_traits=max(0, settings.sleep_max_pattern_per_run - int(rc.extra.get("patternsCreated", 0))),
    )
    result.add(plan.counts)
    await rc.publish_embeds(await _apply(rc, plan))
