"""Issue 7 on real NATS + Postgres (Qdrant in qdrant-client local mode): compaction with a
dry run, restore of the exact original, retention cleanup from every store with receipts,
and global memories only through the operator subject."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.errors import Conflict, Forbidden
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.memory import MemoryCreateRequest, MemoryGetRequest, MemoryRestoreRequest
from memoryd.schemas.ops import CleanupRequest, SummarizeRequest
from shared.db import memories
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from shared.vectors.port import VectorItem
from shared.vectors.registry import VectorStores, open_stores
from tests.support.stack import run_services, service_config

SIG = "local:test:4"


@pytest.fixture
def config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    return service_config(
        nats_server.url,
        pg_dsn,
        {
            "MEMORYD_QDRANT_URL": ":memory:",
            "MEMORYD_QDRANT_COLLECTION": f"t{uuid.uuid4().hex[:8]}",
            "MEMORYD_INGEST_CLEANUP_INTERVAL_S": "0",
        },
    )


@pytest.fixture
async def ingest(config: ServiceConfig) -> AsyncIterator[ServiceContext]:
    async with run_services(["ingest"], config) as ctxs:
        yield ctxs["ingest"]


@pytest.fixture
async def stores(config: ServiceConfig, pool: asyncpg.Pool, ingest: ServiceContext) -> AsyncIterator[VectorStores]:
    vs = await open_stores(config, pool)
    yield vs
    await vs.close()


def _owner() -> str:
    return f"o-{uuid.uuid4().hex[:8]}"


async def _memory(pool: asyncpg.Pool, owner: str, content: str, *, days_old: float = 0, **kw: object) -> str:
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type=str(kw.pop("memory_type", "factual")),
        content=content,
        source="api",
        created_at=datetime.now(UTC) - timedelta(days=days_old),
        **kw,  # type: ignore[arg-type]
    )
    return record.id


async def _embed(stores: VectorStores, owner: str, ids: list[str]) -> None:
    rng = np.random.default_rng(7)
    items = []
    for i in ids:
        v = rng.normal(size=4).astype(np.float32)
        items.append(VectorItem(memory_id=i, owner=owner, vector=v / np.linalg.norm(v)))
    for store in stores.all:
        await store.ensure(SIG, 4)
    counts = await stores.upsert(SIG, items)
    assert set(counts.values()) == {len(ids)}, counts


async def _state(pool: asyncpg.Pool, ids: list[str]) -> dict[str, tuple[str, str, str | None]]:
    rows = await pool.fetch(
        "SELECT id, state, content, full_content FROM memories WHERE id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids]
    )
    return {str(r["id"]): (r["state"], r["content"], r["full_content"]) for r in rows}


async def test_summarize_dry_run_then_real_run_then_restore(
    nc: Client, pool: asyncpg.Pool, stores: VectorStores
) -> None:
    owner = _owner()
    old = [
        await _memory(pool, owner, f"User prefers tool number {i}   with  spaces", days_old=40, session_id="s1")
        for i in range(3)
    ]
    old.append(await _memory(pool, owner, "An older note without a session", days_old=50))
    recent = await _memory(pool, owner, "A fresh memory", days_old=1, session_id="s1")
    glob = await _memory(pool, owner, "Company holiday is on Friday", days_old=90, scope="global")
    other = await _memory(pool, _owner(), "Someone else's old memory", days_old=90)
    await _embed(stores, owner, old)
    before = await _state(pool, [*old, recent, glob, other])

    dry = await call(nc, "summarize", SummarizeRequest(older_than_days=30, owner=owner, dry_run=True))
    assert sorted(dry.candidate_ids) == sorted(old)
    assert dry.candidates == 4 and dry.tokens_before > 0 and dry.tokens_after == 0
    assert await _state(pool, [*old, recent, glob, other]) == before  # nothing changed

    real = await call(nc, "summarize", SummarizeRequest(older_than_days=30, owner=owner))
    assert real.candidate_ids == dry.candidate_ids
    assert len(real.summary_ids) == 2  # one per owner/session: s1 and no session
    assert real.removed is not None
    assert real.removed.pgvector_vectors == 4 and real.removed.qdrant_points == 4
    after = await _state(pool, [*old, recent, glob, other])
    for i in old:
        state, content, full = after[i]
        assert state == "archived" and full == before[i][1] and content == before[i][1]
    assert after[recent] == before[recent] and after[glob] == before[glob] and after[other] == before[other]
    summary = await memories.get(pool, owner, real.summary_ids[0])
    assert summary is not None and summary.memory_type == "summary" and summary.state == "active"
    assert "[factual] User prefers tool number 0 with spaces" in summary.content or "older note" in summary.content
    assert real.tokens_after > 0

    restored = await call(nc, "memory.restore", MemoryRestoreRequest(owner=owner, id=old[0]))
    assert restored.memory.content == "User prefers tool number 0   with  spaces"  # the exact original
    assert restored.memory.state == "active" and restored.memory.full_content is None
    assert restored.memory.needs_reindex
    with pytest.raises(Conflict):
        await call(nc, "memory.restore", MemoryRestoreRequest(owner=owner, id=old[0]))
    from memoryd.errors import NotFound

    with pytest.raises(NotFound):  # another owner cannot restore it
        await call(nc, "memory.restore", MemoryRestoreRequest(owner=_owner(), id=old[1]))


async def test_summarize_keeps_each_agents_memories_apart(
    nc: Client, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    owner = _owner()
    coder = [await _memory(pool, owner, f"Coder note {i}", days_old=40, agent_id="coder") for i in range(2)]
    travel = await _memory(pool, owner, "Travel note", days_old=40, agent_id="travel")
    real = await call(nc, "summarize", SummarizeRequest(older_than_days=30, owner=owner))
    by_agent: dict[str | None, list[str]] = {}
    for summary_id in real.summary_ids:
        summary = await memories.get(pool, owner, summary_id)
        assert summary is not None
        by_agent[summary.agent_id] = sorted(summary.metadata["source_ids"])
    assert by_agent == {"coder": sorted(coder), "travel": [travel]}  # one summary per agent, kept by it


async def test_restore_of_a_demoted_summary_memory(nc: Client, pool: asyncpg.Pool, ingest: ServiceContext) -> None:
    owner = _owner()
    mid = await _memory(pool, owner, "x" * 300)
    await pool.execute(
        "UPDATE memories SET state='summary', full_content=content, content=left(content, 120) || '…' WHERE id=$1",
        uuid.UUID(mid),
    )
    restored = await call(nc, "memory.restore", MemoryRestoreRequest(owner=owner, id=mid))
    assert restored.memory.content == "x" * 300


async def test_cleanup_removes_expired_from_postgres_and_qdrant(
    nc: Client, pool: asyncpg.Pool, stores: VectorStores
) -> None:
    owner = _owner()
    expired = await _memory(pool, owner, "a short-lived note", expires_at=datetime.now(UTC) + timedelta(seconds=1))
    keep = await _memory(pool, owner, "a lasting note")
    ancient = await _memory(pool, owner, "from long ago", days_old=400)
    glob = await _memory(
        pool,
        owner,
        "global and ancient",
        days_old=400,
        scope="global",
        expires_at=datetime.now(UTC) + timedelta(seconds=1),
    )
    await _embed(stores, owner, [expired, keep, ancient])
    await pool.execute(
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])",
        [uuid.UUID(expired), uuid.UUID(glob)],
    )

    dry = await call(nc, "cleanup", CleanupRequest(owner=owner, dry_run=True))
    assert (dry.expired, dry.past_retention) == (1, 1)
    assert sorted(dry.candidate_ids) == sorted([expired, ancient])
    assert dry.removed.rows == 2 and dry.removed.pgvector_vectors == 2
    assert len(await _state(pool, [expired, keep, ancient, glob])) == 4

    real = await call(nc, "cleanup", CleanupRequest(owner=owner))
    assert sorted(real.candidate_ids) == sorted(dry.candidate_ids)
    assert real.removed.rows == 2 and real.removed.pgvector_vectors == 2 and real.removed.qdrant_points == 2
    assert set(await _state(pool, [expired, keep, ancient, glob])) == {keep, glob}
    assert stores.qdrant is not None
    status = await stores.qdrant.status(SIG)
    assert status.vectors == 1  # only `keep` is left in Qdrant


async def test_global_memories_only_through_the_operator_subject(nc: Client, ingest: ServiceContext) -> None:
    req = MemoryCreateRequest(owner="operator", content="Office closes at 6pm", scope="global")
    with pytest.raises(Forbidden):
        await call(nc, "memory.create", req)
    created = await call(nc, "admin.memory.create", req)
    assert created.memory.scope == "global"
    got = await call(nc, "memory.get", MemoryGetRequest(owner="operator", id=created.memory.id))
    assert got.memory.content == "Office closes at 6pm"
