"""Handling one ``ExtractJob``: rule facts (and LLM facts), entities, one transaction, embed jobs.

Per job: the turns to read (user turns, plus assistant turns with the owner's ``extractAssistant``);
rule facts per turn (``logic.extract_facts``), deduplicated by key with the later turn winning, and
LLM facts when an extractor is configured and no earlier delivery completed the LLM pass (called
before the transaction: its failure only costs the LLM facts); one transaction upserting, by
``(owner, key)``, the facts that fit the owner's quota (``logic.quota``; the rest are counted as
``over_quota`` and the job completes), the entities and mentions and the ``extract_runs`` row;
after the commit an ``EmbedJob`` (``Nats-Msg-Id`` ``embed:<id>:<hash>``) per fact that is new,
changed or still without a vector. Everything is an upsert, so a redelivered job writes nothing
new and republishes only what JetStream dedupes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from nats.js import JetStreamContext

from memoryd.schemas import EmbedJob, ExtractJob
from memoryd.schemas.events import Turn
from services.extract.adapters import postgres as store
from services.extract.adapters.llm import LlmExtractor
from services.extract.logic.entities import Entity, extract_entities
from services.extract.logic.llm_facts import ValidFact
from services.extract.logic.quota import admit
from services.extract.logic.rules import Fact, agent_key, extract_facts, fact_metadata
from shared.bus.embed_jobs import publish_embed_jobs
from shared.db.pool import Connection, Pool
from shared.observability.logging import get_logger
from shared.observability.metrics import FACTS
from shared.settings.memory import MemorySettings

log = get_logger(__name__)

SettingsLookup = Callable[[str], Awaitable[MemorySettings]]


@dataclass(frozen=True)
class ExtractDeps:
    pool: Pool
    js: JetStreamContext
    settings: SettingsLookup
    llm: LlmExtractor | None = None


@dataclass(frozen=True)
class ExtractOutcome:
    facts: list[store.StoredFact]
    llm_status: str
    new_mentions: int
    embed_jobs: int
    over_quota: int = 0  # facts not written: the owner's quota is full


def eligible_turns(turns: list[Turn], settings: MemorySettings) -> list[Turn]:
    roles = {"user", "assistant"} if settings.extract_assistant else {"user"}
    return [t for t in turns if t.role in roles]


def rule_facts(turns: list[Turn]) -> list[Fact]:
    """Facts of all turns by key: a later turn's statement wins, at the first mention's place."""
    by_key: dict[str, Fact] = {}
    for turn in turns:
        for fact in extract_facts(turn.content):
            by_key[fact.key] = fact
    return list(by_key.values())


def _same_text(text: str) -> str:
    return " ".join(text.casefold().rstrip(".!").split())


def new_llm_facts(rules: list[Fact], llm: list[ValidFact]) -> list[ValidFact]:
    """LLM facts that do not repeat a rule fact of the same job word for word."""
    seen = {_same_text(fact.content) for fact in rules}
    return [fact for fact in llm if _same_text(fact.content) not in seen]


def plan_facts(job: ExtractJob, rules: list[Fact], llm: list[ValidFact]) -> list[store.PlannedFact]:
    """Rows to upsert: the rule facts, then the LLM facts (already without repeats)."""
    extracted_at = job.occurred_at.isoformat()
    planned = [
        store.PlannedFact(
            key=agent_key(fact.key, job.agent_id),
            memory_type=fact.memory_type,
            content=fact.content,
            source="rule",
            metadata={**fact_metadata(fact, extracted_at=extracted_at), "event_id": job.event_id},
        )
        for fact in rules
    ]
    planned += [
        store.PlannedFact(
            key=agent_key(fact.key, job.agent_id),
            memory_type=fact.memory_type,
            content=fact.content,
            source="llm",
            metadata={
                "category": fact.category,
                "extracted_at": extracted_at,
                "source": "llm",
                "event_id": job.event_id,
            },
        )
        for fact in llm
    ]
    return planned


def entity_mentions(turns: list[Turn], facts: list[store.StoredFact]) -> list[tuple[Entity, str]]:
    """Entities of each stored turn (linked to its memory) and of each fact (linked to it)."""
    mentions = [(e, t.memory_id) for t in turns if t.memory_id for e in extract_entities(t.content)]
    mentions += [(e, f.memory_id) for f in facts for e in extract_entities(f.content)]
    return mentions


async def handle_extract(job: ExtractJob, deps: ExtractDeps) -> ExtractOutcome:
    with structlog.contextvars.bound_contextvars(owner=job.owner, event_id=job.event_id):
        settings = await deps.settings(job.owner)
        turns = eligible_turns(job.turns, settings)
        rules = rule_facts(turns)
        llm_status, llm_facts = "off", []
        if deps.llm is not None and turns:
            if await store.llm_already_done(deps.pool, job.owner, job.event_id):
                llm_status = "done_before"
            else:
                extraction = await deps.llm.extract(job.owner, [(t.role, t.content) for t in turns])
                llm_status, llm_facts = extraction.status, new_llm_facts(rules, extraction.facts)
                if len(llm_facts) < len(extraction.facts):
                    FACTS.labels("llm", "duplicate").inc(len(extraction.facts) - len(llm_facts))
        planned = plan_facts(job, rules, llm_facts)
        async with deps.pool.acquire() as conn, conn.transaction():
            planned, over_quota = await within_quota(conn, job.owner, planned, settings)
            stored = await store.upsert_facts(
                conn, owner=job.owner, session_id=job.session_id, agent_id=job.agent_id, facts=planned
            )
            new_mentions = await store.link_entities(conn, job.owner, entity_mentions(turns, stored))
            await store.record_run(
                conn,
                owner=job.owner,
                event_id=job.event_id,
                rule_facts=len(rules),
                llm_facts=len(llm_facts),
                llm_status=llm_status,
            )
        to_embed = [f for f in stored if f.needs_embed]
        if llm_status == "done_before":
            known = {f.memory_id for f in to_embed}
            pending = await store.unembedded_llm_facts(deps.pool, job.owner, job.event_id)
            to_embed += [f for f in pending if f.memory_id not in known]
        # a failed publish is DependencyDown: the consumer naks and retries (facts are upserts)
        await publish_embed_jobs(deps.js, embed_jobs(job.owner, to_embed))
        for fact in stored:
            FACTS.labels(fact.source, "created" if fact.created else "updated" if fact.changed else "unchanged").inc()
        log.info(
            "extract.done",
            turns=len(turns),
            facts=len(stored),
            llm=llm_status,
            new_mentions=new_mentions,
            embed_jobs=len(to_embed),
            over_quota=len(over_quota),
        )
        return ExtractOutcome(stored, llm_status, new_mentions, len(to_embed), len(over_quota))


async def within_quota(
    conn: Connection, owner: str, planned: list[store.PlannedFact], settings: MemorySettings
) -> tuple[list[store.PlannedFact], list[store.PlannedFact]]:
    """The facts that fit the owner's quota, and those refused (counted and logged)."""
    if not planned or (settings.max_memories <= 0 and settings.max_memory_bytes <= 0):
        return planned, []
    held = await store.holding(conn, owner, [f.key for f in planned])
    sizes = [(f.key, len(f.content.encode("utf-8", "surrogatepass"))) for f in planned]
    admitted, refused = admit(sizes, held, max_memories=settings.max_memories, max_bytes=settings.max_memory_bytes)
    over = [planned[i] for i in sorted(refused)]
    for fact in over:
        FACTS.labels(fact.source, "over_quota").inc()
    if over:
        log.warning(
            "extract.quota_full",
            refused=len(over),
            memories=held.count,
            bytes=held.size,
            max_memories=settings.max_memories,
            max_memory_bytes=settings.max_memory_bytes,
        )
    return [planned[i] for i in sorted(admitted)], over


def embed_jobs(owner: str, facts: list[store.StoredFact]) -> list[EmbedJob]:
    return [
        EmbedJob(
            memory_id=f.memory_id,
            owner=owner,
            content_hash=f.content_hash,
            reason="new" if f.created else "update",
        )
        for f in facts
    ]
