"""Test helper: memories rows in Postgres and the matching ``VectorItem``s, written together.

pgvector filters by joining ``memories``; Qdrant filters on the payload built from the
``VectorItem``. ``World.add`` writes both from the same values, so one test body checks
both adapters, and ``expected`` computes the exact cosine ranking with numpy. Under a ``:half``
signature the vectors (and queries) are rounded to float16 first, as halfvec storage holds them:
the contract is exactness over what is stored (the loss of the rounding itself is measured on
real embeddings apart, ``test_half_recall``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import asyncpg
import numpy as np
from numpy.typing import NDArray

from shared.db.memories import content_hash
from shared.vectors.port import VectorItem, VectorStore
from shared.vectors.signature import vector_quantization


def unit(rng: np.random.Generator, dim: int, n: int | None = None) -> NDArray[np.float32]:
    shape = (dim,) if n is None else (n, dim)
    v = rng.standard_normal(shape).astype(np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def near(rng: np.random.Generator, v: NDArray[np.float32], eps: float = 0.02) -> NDArray[np.float32]:
    """A vector very close to ``v`` (cosine ~ 1 - eps^2/2)."""
    w = v + eps * rng.standard_normal(v.shape).astype(np.float32) / np.sqrt(v.size)
    return (w / np.linalg.norm(w)).astype(np.float32)


@dataclass
class Row:
    id: str
    owner: str
    vector: NDArray[np.float32]
    session_id: str | None = None
    agent_id: str | None = None
    scope: str = "apiKey"
    state: str = "active"
    memory_type: str = "factual"
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    expires_at: datetime | None = None

    def item(self) -> VectorItem:
        return VectorItem(
            memory_id=self.id,
            owner=self.owner,
            vector=self.vector,
            session_id=self.session_id,
            agent_id=self.agent_id,
            scope=self.scope,
            state=self.state,
            memory_type=self.memory_type,
            created_at=self.created_at,
            expires_at=self.expires_at,
        )


class World:
    """Rows staged with ``add``, written to Postgres and the store by ``flush``."""

    def __init__(self, pool: asyncpg.Pool, store: VectorStore, signature: str) -> None:
        self.pool = pool
        self.store = store
        self.signature = signature
        self.rows: dict[str, Row] = {}
        self._pending: list[Row] = []

    def add(self, owner: str, vector: NDArray[np.float32], **fields: object) -> str:
        row = Row(id=str(uuid.uuid4()), owner=owner, vector=self.stored(vector), **fields)  # type: ignore[arg-type]
        self.rows[row.id] = row
        self._pending.append(row)
        return row.id

    def stored(self, vector: NDArray[np.float32] | Sequence[float]) -> NDArray[np.float32]:
        """``vector`` as the store holds it under this world's signature (float16 for ``:half``)."""
        arr = np.asarray(vector, dtype=np.float32)
        return arr.astype(np.float16).astype(np.float32) if vector_quantization(self.signature) == "half" else arr

    async def flush(self, signature: str | None = None) -> int:
        rows, self._pending = self._pending, []
        await self.pool.copy_records_to_table(
            "memories",
            records=[
                (
                    uuid.UUID(r.id),
                    r.owner,
                    r.session_id,
                    r.memory_type,
                    f"memory {r.id}",
                    "api",
                    r.scope,
                    r.created_at,
                    r.created_at,
                    r.expires_at,
                    r.state,
                    content_hash(f"memory {r.id}"),
                    r.agent_id,
                )
                for r in rows
            ],
            columns=[
                "id",
                "owner",
                "session_id",
                "type",
                "content",
                "source",
                "scope",
                "created_at",
                "updated_at",
                "expires_at",
                "state",
                "content_hash",
                "agent_id",
            ],
        )
        return await self.store.upsert(signature or self.signature, [r.item() for r in rows])

    async def analyze(self) -> None:
        """Fresh planner statistics, as autovacuum keeps them in a running system."""
        await self.pool.execute("ANALYZE memories; ANALYZE memory_embeddings")

    async def set_state(self, owner: str, ids: Sequence[str], state: str) -> None:
        """Change the memories' state in Postgres and mirror it into the store (as ingest/sleep do)."""
        await self.pool.execute(
            "UPDATE memories SET state = $3 WHERE owner = $1 AND id = ANY($2::uuid[])",
            owner,
            [uuid.UUID(i) for i in ids],
            state,
        )
        await self.store.update_payload(owner, ids, state=state)
        for i in ids:
            self.rows[i].state = state

    def expected(
        self,
        owner: str,
        query: NDArray[np.float32],
        limit: int,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        include_global: bool = True,
        types: Sequence[str] | None = None,
        created_after: datetime | None = None,
        now: datetime | None = None,
    ) -> list[tuple[str, float]]:
        """The exact cosine top-``limit`` of what ``owner`` may see (the port's filter rules)."""
        moment = now or datetime.now(UTC)
        query = self.stored(query)
        seen = []
        for r in self.rows.values():
            own = (
                r.owner == owner
                and (session_id is None or r.session_id == session_id)
                and (agent_id is None or r.agent_id == agent_id)
            )
            if not (own or (include_global and r.scope == "global")):
                continue
            if r.state != "active" or (r.expires_at is not None and r.expires_at <= moment):
                continue
            if types is not None and r.memory_type not in types:
                continue
            if created_after is not None and r.created_at <= created_after:
                continue
            cos = float(np.dot(r.vector, query) / (np.linalg.norm(r.vector) * np.linalg.norm(query)))
            seen.append((r.id, cos))
        seen.sort(key=lambda p: (-p[1], p[0]))
        return seen[:limit]
