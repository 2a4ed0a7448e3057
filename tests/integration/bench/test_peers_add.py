"""The peers benchmark's time in the pipeline, read from real rows: a memory's commit time to its
vector's, as percentiles over one owner's memories (other owners' left out)."""

from __future__ import annotations

import asyncpg
import pytest

from bench.peers import stored_to_embedded
from shared.db import memories

pytestmark = pytest.mark.integration


async def test_stored_to_embedded_percentiles_of_one_owner(pool: asyncpg.Pool) -> None:
    async def add(owner: str, seconds: float) -> None:
        text = f"{owner} {seconds}"
        rec = await memories.insert(pool, owner=owner, memory_type="factual", content=text, source="api")
        await pool.execute(
            "INSERT INTO memory_embeddings (memory_id, signature, owner, dim, embedding, created_at)"
            " SELECT id, 'local:m:3', owner, 3, '[1,0,0]', created_at + make_interval(secs => $2) FROM memories"
            " WHERE id = $1::uuid",
            rec.id,
            seconds,
        )

    for s in (1.0, 2.0, 3.0, 4.0, 5.0):
        await add("pipe-a", s)
    await add("pipe-b", 100.0)
    got = await stored_to_embedded(pool, "pipe-a")
    assert got == {"p50": 3.0, "p90": 4.6, "p99": 4.96}
    assert await stored_to_embedded(pool, "pipe-nobody") == {"p50": 0.0, "p90": 0.0, "p99": 0.0}
