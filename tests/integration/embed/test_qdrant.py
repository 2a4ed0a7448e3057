"""With Qdrant configured (qdrant-client local mode here), workers write both stores and the
new signature's collection is made active behind the alias."""

from __future__ import annotations

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from services.embed.adapters import LocalEmbedder
from shared.vectors.port import VectorQuery
from shared.vectors.registry import open_stores
from tests.support.eventually import eventually
from tests.support.stack import run_services, service_config

from .helpers import SIG, add_memories, embedded_count, job_of, publish, queue_drained


async def test_jobs_write_pgvector_and_qdrant(
    nats_server: EmbeddedNats, nc: Client, pool: asyncpg.Pool, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    config = service_config(nats_server.url, pg_dsn, {"MEMORYD_QDRANT_URL": ":memory:"})
    mems = await add_memories(pool, "gina", [f"Gina's trip {i}: a week of hiking in the Alps." for i in range(10)])
    mems += await add_memories(pool, "hugo", ["Hugo collects vintage radios."])
    ids = [m.id for m in mems]
    async with run_services(["embed"], config):
        stores = await open_stores(config, pool)  # shares the service's local Qdrant client
        try:
            js = nc.jetstream()
            await publish(js, [job_of(m) for m in mems])
            await eventually(lambda: _all(pool, ids), what="vectors in both stores")
            await eventually(lambda: queue_drained(js), what="jobs acked")
            assert stores.qdrant is not None
            status = await stores.qdrant.status(SIG)
            assert status.healthy and status.vectors == len(mems) and "not active" not in status.detail
            query = LocalEmbedder.default().embed(["hiking holidays in the mountains"])[0]
            hits = await stores.qdrant.search(SIG, VectorQuery(owner="gina", vector=query, limit=20))
            assert sorted(h.memory_id for h in hits) == sorted(m.id for m in mems if m.owner == "gina")
        finally:
            await stores.close()
    rows = {r["store"]: r for r in await pool.fetch("SELECT * FROM memory_vec_meta")}
    assert {s: (r["embedding_signature"], r["pending_signature"]) for s, r in rows.items()} == {
        "pgvector": (SIG, None),
        "qdrant": (SIG, None),
    }


async def _all(pool: asyncpg.Pool, ids: list[str]) -> bool:
    return await embedded_count(pool, ids) == len(ids)
