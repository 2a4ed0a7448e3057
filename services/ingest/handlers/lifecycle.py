"""Memory lifecycle RPCs: restore, compaction (``summarize``), retention ``cleanup``, and the
periodic cleanup loop.

Every path that removes something returns and logs a ``DeletionReceipt`` (rows, pgvector
vectors, Qdrant points, history rows), so an operator can prove a deletion. Global-scope
memories are never compacted or cleaned up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import msgspec

from memoryd.errors import Conflict, Forbidden, NotFound
from memoryd.schemas.memory import (
    DeletionReceipt,
    MemoryRestoreRequest,
    MemoryRestoreResult,
)
from memoryd.schemas.ops import CleanupRequest, CleanupResult, SummarizeRequest, SummarizeResult
from services.ingest.adapters import postgres_lifecycle as lifecycle_pg
from services.ingest.adapters import retention
from services.ingest.adapters.nats import Embed, Publisher
from services.ingest.adapters.stores import MemoryStores
from services.ingest.logic.chat import GLOBAL_REFUSED, check_text
from services.ingest.logic.lifecycle import (
    Candidate,
    condensed_summary,
    group,
    retention_cutoff,
    summary_prompt,
    tokens_of,
)
from shared.db import memories
from shared.db.advisory import try_advisory_lock
from shared.llm import LlmClient
from shared.observability.logging import get_logger
from shared.periodic import every
from shared.settings.memory import GLOBAL_OWNER, MemorySettings
from shared.vectors.port import VectorStore

log = get_logger(__name__)

CLEANUP_LOCK = 0x636C6E75  # "clnu": one cleanup at a time across ingest replicas
MAX_CANDIDATES = 10_000


class LifecycleApi:
    def __init__(
        self,
        stores: MemoryStores,
        pgvector: VectorStore,
        publisher: Publisher,
        settings: Callable[[str], Awaitable[MemorySettings]],
        llm: LlmClient | None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._stores = stores
        self._pool = stores.pool
        self._pgvector = pgvector
        self._pub = publisher
        self._settings = settings
        self._llm = llm
        #: what time it is for retention cleanup (tests move it forward)
        self._clock = clock

    # --- restore ----------------------------------------------------------------------------
    async def restore(self, req: MemoryRestoreRequest) -> MemoryRestoreResult:
        """A summary or archived memory gets its original content back, active, re-embedded
        (a global one only on the operator's ``admin.memory.restore``: 403 here)."""
        return await self._restore(req, operator=False)

    async def admin_restore(self, req: MemoryRestoreRequest) -> MemoryRestoreResult:
        return await self._restore(req, operator=True)

    async def _restore(self, req: MemoryRestoreRequest, *, operator: bool) -> MemoryRestoreResult:
        async with self._pool.acquire() as conn, conn.transaction():
            current = await memories.get(conn, req.owner, req.id)
            if current is None:
                raise NotFound(f"memory {req.id} not found")
            if current.scope == "global" and not operator:
                raise Forbidden(f"memory {req.id} is global: {GLOBAL_REFUSED}")
            if current.state == "active":
                raise Conflict(f"memory {req.id} is already active")
            original = current.full_content if current.full_content is not None else current.content
            record = await lifecycle_pg.restore(conn, req.owner, req.id, original)
        await self._pub.embed_best_effort([Embed(record.id, record.owner, record.content_hash, "restore")])
        await self._stores.mirror_payload([record])
        return MemoryRestoreResult(memory=record)

    # --- summarize --------------------------------------------------------------------------
    async def _candidates(self, req: SummarizeRequest) -> list[Candidate]:
        cutoff = datetime.now(UTC) - timedelta(days=req.older_than_days)
        return await lifecycle_pg.summarize_candidates(self._pool, cutoff, req.owner, req.session_id, MAX_CANDIDATES)

    async def _summary_text(self, owner: str, group_items: list[Candidate]) -> tuple[str, str]:
        if self._llm is not None and self._llm.configured:
            try:
                result = await self._llm.complete_text(
                    owner=owner, operation="summarize", messages=summary_prompt(group_items), max_tokens=600
                )
                if result.value.strip():
                    return result.value.strip(), "llm"
            except Exception as exc:
                log.warning("summarize.llm_failed", owner=owner, error=str(exc))
        return condensed_summary(group_items), "api"

    async def summarize(self, req: SummarizeRequest) -> SummarizeResult:
        """Dry run: the candidates and their tokens. Real run: one summary per owner/session/agent,
        originals archived (restorable, ``full_content`` kept) and their vectors removed."""
        check_text({"session_id": req.session_id})
        candidates = await self._candidates(req)
        ids = [c.id for c in candidates]
        before = tokens_of([c.content for c in candidates])
        if req.dry_run or not candidates:
            return SummarizeResult(candidates=len(candidates), tokens_before=before, tokens_after=0, candidate_ids=ids)
        summaries: list[str] = []
        after = 0
        receipt = DeletionReceipt()
        for (owner, session_id, agent_id), items in group(candidates).items():
            text, source = await self._summary_text(owner, items)
            async with self._pool.acquire() as conn, conn.transaction():
                record = await memories.insert(
                    conn,
                    owner=owner,
                    memory_type="summary",
                    content=text,
                    source=source,
                    session_id=session_id,
                    agent_id=agent_id,
                    metadata={"source_ids": [c.id for c in items], "older_than_days": req.older_than_days},
                )
                await lifecycle_pg.archive_into_summary(conn, owner, [c.id for c in items], record.id)
            vectors = await self._pgvector.delete(owner, [c.id for c in items])
            points = sum([await s.delete(owner, [c.id for c in items]) for s in self._stores.external])
            receipt = receipt.plus(DeletionReceipt(pgvector_vectors=vectors, qdrant_points=points))
            await self._pub.embed_best_effort([Embed(record.id, owner, record.content_hash, "new")])
            summaries.append(record.id)
            after += tokens_of([text])
        log.info("deletion.receipt", path="summarize", candidates=len(ids), **msgspec.structs.asdict(receipt))
        return SummarizeResult(
            candidates=len(candidates),
            tokens_before=before,
            tokens_after=after,
            candidate_ids=ids,
            summary_ids=summaries,
            removed=receipt,
        )

    # --- cleanup ----------------------------------------------------------------------------
    async def _cleanup_candidates(self, owner: str | None) -> tuple[dict[str, list[str]], int, int]:
        now = self._clock()
        by_owner: dict[str, list[str]] = {}
        expired = await lifecycle_pg.expired(self._pool, now, owner)
        for o, memory_id in expired:
            by_owner.setdefault(o, []).append(memory_id)
        past = 0
        for o in [owner] if owner else await lifecycle_pg.owners(self._pool):
            days = (await self._settings(o)).retention_days
            ids = await lifecycle_pg.past_retention(self._pool, o, retention_cutoff(now, days), now)
            past += len(ids)
            by_owner.setdefault(o, []).extend(ids)
        return {o: ids for o, ids in by_owner.items() if ids}, len(expired), past

    async def cleanup(self, req: CleanupRequest) -> CleanupResult:
        by_owner, expired, past = await self._cleanup_candidates(req.owner)
        ids = [i for owner_ids in by_owner.values() for i in owner_ids]
        bookkeeping: dict[str, int] = {}
        if req.owner is None:  # bookkeeping goes by the global retention, for every owner at once
            days = (await self._settings(GLOBAL_OWNER)).bookkeeping_retention_days
            bookkeeping = await retention.prune(self._pool, self._clock() - timedelta(days=days), dry_run=req.dry_run)
        if req.dry_run:
            vectors = await lifecycle_pg.vector_count(self._pool, ids)
            there = DeletionReceipt(rows=len(ids), pgvector_vectors=vectors)
            return CleanupResult(
                expired=expired,
                past_retention=past,
                dry_run=True,
                removed=there,
                candidate_ids=ids,
                bookkeeping=bookkeeping,
            )
        total = DeletionReceipt()
        for owner, owner_ids in by_owner.items():
            total = total.plus(await self._stores.delete(owner, owner_ids))
        if req.owner is None:  # reconcile the vector stores with the rows (points a deletion left)
            total = total.plus(DeletionReceipt(orphan_points=await self._stores.sweep_orphans()))
        log.info(
            "deletion.receipt", path="cleanup", expired=expired, past_retention=past, **msgspec.structs.asdict(total)
        )
        log.info("retention.bookkeeping", **bookkeeping)
        return CleanupResult(
            expired=expired,
            past_retention=past,
            dry_run=False,
            removed=total,
            candidate_ids=ids,
            bookkeeping=bookkeeping,
        )

    async def cleanup_periodically(self, interval_s: float, stop: asyncio.Event) -> None:
        """Run ``cleanup`` every ``interval_s`` on one ingest replica at a time."""

        async def one_replica() -> None:
            async with self._pool.acquire() as conn, try_advisory_lock(conn, CLEANUP_LOCK) as taken:
                if taken:
                    await self.cleanup(CleanupRequest())

        await every(interval_s, stop, one_replica, failed="cleanup.failed", wait_first=True)
