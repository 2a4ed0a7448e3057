"""Memories across stores: deletion with a receipt, and the filter payload external stores mirror.

Postgres holds the rows, pgvector vectors and history (``shared.db.memories.delete``
removes them in one transaction and counts them). External vector stores (Qdrant, when
configured: ``shared.vectors.registry``) hold copies of the vectors with a filter payload.

Deletion commits the rows (and what was derived from them) first, then removes the external
vectors: an embed batch that read a row before it went may upsert its point after the
delete, so deleting points first could leave one nobody removes. A point left behind (the
store was down, or that race) has no row, so search cannot return it (hits are read back
from the rows), and ``sweep_orphans`` removes it; the receipt counts it as pending.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence

import asyncpg
import msgspec

from memoryd.errors import DependencyDown
from memoryd.schemas.memory import DeletionReceipt, MemoryRecord
from shared.db import memories
from shared.observability.logging import get_logger
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorStore

log = get_logger(__name__)
_CHUNK = 5000


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class MemoryStores:
    """The Postgres pool plus the external vector stores that mirror it."""

    def __init__(
        self, pool: asyncpg.Pool, external: Sequence[VectorStore] = (), pgvector: VectorStore | None = None
    ) -> None:
        self.pool = pool
        self.external = list(external)
        self.pgvector = pgvector
        #: removes dead letters quoting any of the strings; how many (set by the app)
        self.dead_letters: Callable[[list[str]], Awaitable[int]] | None = None

    async def _delete_from_external_stores(self, owner: str, ids: Sequence[str]) -> DeletionReceipt:
        """Remove the memories' vectors from every store other than pgvector (after the rows)."""
        points = pending = 0
        for store in self.external:
            try:
                points += await store.delete(owner, ids)
            except DependencyDown as exc:
                log.warning("ingest.points_pending", store=store.name, ids=len(ids), error=exc.description)
                pending += len(ids)
        return DeletionReceipt(qdrant_points=points, pending_points=pending)

    async def delete(self, owner: str, ids: Sequence[str | uuid.UUID]) -> DeletionReceipt:
        """Delete the owner's memories by id from every store (the DLQ too, when ``dead_letters``
        is set), with what was derived from them; ids of other owners are untouched."""
        total = DeletionReceipt()
        for start in range(0, len(ids), _CHUNK):
            chunk = [str(i) for i in ids[start : start + _CHUNK]]
            async with self.pool.acquire() as conn:
                removal = await memories.delete(conn, owner, chunk)
            total = total.plus(removal.receipt).plus(await self._delete_from_external_stores(owner, removal.ids))
            if self.dead_letters is not None and removal.ids:
                total = total.plus(DeletionReceipt(dlq_messages=await self.dead_letters(removal.quotes)))
        if total.rows and isinstance(self.pgvector, PgVectorStore):
            try:  # a cleared (or much shrunk) owner's own HNSW index goes with its memories
                await self.pgvector.shrink_owner(owner)
            except (DependencyDown, asyncpg.PostgresError) as exc:  # the rows are gone; the next deletion retries
                log.warning("ingest.owner_index_drop_failed", owner=owner, error=str(exc))
        log.info("deletion.receipt", owner=owner, **msgspec.structs.asdict(total))
        return total

    async def sweep_orphans(self) -> int:
        """Remove vectors (Qdrant points, pgvector rows) whose memory row is gone; how many."""
        removed = 0
        for store in [*self.external, *([self.pgvector] if self.pgvector is not None else [])]:
            async for page in store.point_refs():
                ids = [mid for mid, _ in page]
                existing = await self._existing(ids)
                by_owner: dict[str, list[str]] = {}
                for mid, owner in page:
                    if mid not in existing:
                        by_owner.setdefault(owner, []).append(mid)
                for owner, orphans in by_owner.items():
                    removed += await store.delete(owner, orphans)
        if removed:
            log.info("ingest.orphans_removed", points=removed)
        return removed

    async def _existing(self, ids: list[str]) -> set[str]:
        rows = await self.pool.fetch(
            "SELECT id FROM memories WHERE id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids if _is_uuid(i)]
        )
        return {str(r["id"]) for r in rows}

    async def mirror_payload(self, records: Sequence[MemoryRecord]) -> None:
        """Copy changed filter fields (state, scope, type, session, agent, expiry) to external stores.

        After a committed change, best effort: a store that is down keeps the old payload
        until the memory is next embedded; the failure is logged.
        """
        for store in self.external:
            for rec in records:
                try:
                    await store.update_payload(
                        rec.owner,
                        [rec.id],
                        state=rec.state,
                        scope=rec.scope,
                        memory_type=rec.memory_type,
                        session_id=rec.session_id,
                        agent_id=rec.agent_id,
                        expires_at=rec.expires_at,
                    )
                except DependencyDown as exc:
                    log.warning("ingest.payload_mirror_failed", store=store.name, error=exc.description)
                    break
