"""Memories across stores: deletion with a receipt, and the filter payload external stores mirror.

Postgres holds the rows, pgvector vectors and history (``shared.db.memories.delete``
removes them in one transaction and counts them). External vector stores (Qdrant, when
configured: ``shared.vectors.registry``) hold copies of the vectors with a filter payload.

Deletion removes the external vectors first: if a store is down the call fails (503)
with the rows still there, so a retry finishes the job; a row is never gone while its
vector stays searchable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg

from shared.db import memories
from shared.errors import DependencyDown
from shared.observability.logging import get_logger
from shared.schemas.memory import DeletionReceipt, MemoryRecord
from shared.vectors.port import VectorStore

log = get_logger(__name__)
_CHUNK = 5000


class MemoryStores:
    """The Postgres pool plus the external vector stores that mirror it."""

    def __init__(self, pool: asyncpg.Pool, external: Sequence[VectorStore] = ()) -> None:
        self.pool = pool
        self.external = list(external)

    async def _delete_from_external_stores(self, owner: str, ids: Sequence[str]) -> int:
        """Remove the memories' vectors from every store other than pgvector; return how many."""
        return sum([await store.delete(owner, ids) for store in self.external])

    async def delete(self, owner: str, ids: Sequence[str | uuid.UUID]) -> DeletionReceipt:
        """Delete the owner's memories by id from every store; ids of other owners are untouched."""
        total = DeletionReceipt()
        for start in range(0, len(ids), _CHUNK):
            chunk = [str(i) for i in ids[start : start + _CHUNK]]
            points = await self._delete_from_external_stores(owner, chunk)
            async with self.pool.acquire() as conn:
                receipt = await memories.delete(conn, owner, chunk)
            total = total.plus(receipt).plus(DeletionReceipt(qdrant_points=points))
        return total

    async def mirror_payload(self, records: Sequence[MemoryRecord]) -> None:
        """Copy changed filter fields (state, scope, type, session, expiry) to external stores.

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
                        expires_at=rec.expires_at,
                    )
                except DependencyDown as exc:
                    log.warning("ingest.payload_mirror_failed", store=store.name, error=exc.description)
                    break
