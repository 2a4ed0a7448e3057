"""Memory lifecycle RPCs: restore, compaction (``summarize``), retention ``cleanup``, and the
periodic cleanup loop.

Every path that removes something returns and logs a ``DeletionReceipt`` (rows, pgvector
vectors, Qdrant points, history rows), so an operator can prove a deletion. Global-scope
memories are never compacted or cleaned up.
"""

from __future__ import annotations

import asyncio
import uuid
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

_CANDIDATES = """
SELECT id, owner, session_id, type, content FROM memories
WHERE state = 'active' AND scope <> 'global' AND type <> 'summary' AND created_at < $1
  AND ($2::text IS NULL OR owner = $2) AND ($3::text IS NULL OR session_id = $3)
ORDER BY owner, session_id NULLS FIRST, created_at, id
LIMIT $4
"""


class LifecycleApi:
    def __init__(
        self,
        stores: MemoryStores,
        pgvector: VectorStore,
        publisher: Publisher,
        settings: Callable[[str], Awaitable[MemorySettings]],
        llm: LlmClient | None,
    ) -> None:
        self._stores = stores
        self._pool = stores.pool
        self._pgvector = pgvector
        self._pub = publisher
        self._settings = settings
        self._llm = llm

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
            row = await conn.fetchrow(
                f"UPDATE memories SET content = $3, full_content = NULL, state = 'active', content_hash = $4,"
                f" needs_reindex = true, updated_at = now(), metadata = metadata - 'summary_id'"
                f" WHERE owner = $1 AND id = $2 RETURNING {memories.COLUMNS}",
                req.owner,
                uuid.UUID(req.id),
                original,
                memories.content_hash(original),
            )
        assert row is not None
        record = memories.to_record(row)
        await self._pub.embed_best_effort([Embed(record.id, record.owner, record.content_hash, "restore")])
        await self._stores.mirror_payload([record])
        return MemoryRestoreResult(memory=record)

    # --- summarize --------------------------------------------------------------------------
    async def _candidates(self, req: SummarizeRequest) -> list[Candidate]:
        cutoff = datetime.now(UTC) - timedelta(days=req.older_than_days)
        rows = await self._pool.fetch(_CANDIDATES, cutoff, req.owner, req.session_id, MAX_CANDIDATES)
        return [Candidate(str(r["id"]), r["owner"], r["session_id"], r["type"], r["content"]) for r in rows]

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
        """Dry run: the candidates and their tokens. Real run: one summary per owner/session,
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
        for (owner, session_id), items in group(candidates).items():
            text, source = await self._summary_text(owner, items)
            member_ids = [uuid.UUID(c.id) for c in items]
            async with self._pool.acquire() as conn, conn.transaction():
                record = await memories.insert(
                    conn,
                    owner=owner,
                    memory_type="summary",
                    content=text,
                    source=source,
                    session_id=session_id,
                    metadata={"source_ids": [c.id for c in items], "older_than_days": req.older_than_days},
                )
                await conn.execute(
                    "UPDATE memories SET state = 'archived', full_content = coalesce(full_content, content),"
                    " metadata = metadata || jsonb_build_object('summary_id', $3::text), updated_at = now()"
                    " WHERE owner = $1 AND id = ANY($2::uuid[]) AND state = 'active'",
                    owner,
                    member_ids,
                    record.id,
                )
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
        now = datetime.now(UTC)
        by_owner: dict[str, list[str]] = {}
        expired_rows = await self._pool.fetch(
            "SELECT id, owner FROM memories WHERE scope <> 'global' AND expires_at IS NOT NULL AND expires_at <= $1"
            " AND ($2::text IS NULL OR owner = $2) ORDER BY owner, id",
            now,
            owner,
        )
        for r in expired_rows:
            by_owner.setdefault(r["owner"], []).append(str(r["id"]))
        owners = (
            [owner]
            if owner
            else [
                r["owner"]
                for r in await self._pool.fetch("SELECT DISTINCT owner FROM memories WHERE scope <> 'global'")
            ]
        )
        past = 0
        for o in owners:
            days = (await self._settings(o)).retention_days
            rows = await self._pool.fetch(
                "SELECT id FROM memories WHERE owner = $1 AND scope <> 'global' AND created_at < $2"
                " AND (expires_at IS NULL OR expires_at > $3) ORDER BY id",
                o,
                retention_cutoff(now, days),
                now,
            )
            past += len(rows)
            by_owner.setdefault(o, []).extend(str(r["id"]) for r in rows)
        return {o: ids for o, ids in by_owner.items() if ids}, len(expired_rows), past

    async def cleanup(self, req: CleanupRequest) -> CleanupResult:
        by_owner, expired, past = await self._cleanup_candidates(req.owner)
        ids = [i for owner_ids in by_owner.values() for i in owner_ids]
        bookkeeping: dict[str, int] = {}
        if req.owner is None:  # bookkeeping goes by the global retention, for every owner at once
            days = (await self._settings(GLOBAL_OWNER)).bookkeeping_retention_days
            bookkeeping = await retention.prune(
                self._pool, datetime.now(UTC) - timedelta(days=days), dry_run=req.dry_run
            )
        if req.dry_run:
            vectors = await self._pool.fetchval(
                "SELECT count(*) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids]
            )
            there = DeletionReceipt(rows=len(ids), pgvector_vectors=int(vectors or 0))
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
