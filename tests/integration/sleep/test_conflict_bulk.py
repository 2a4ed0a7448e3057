"""The bulk pair pass changes nothing a run decides: on one seeded corpus, a run whose pairs come
from the large-owner path (`bulk_pairs`: k-means clusters, exact cosines within each) and a run
whose pairs come from the exact all-vectors comparison judge the same pairs, write the same, and
produce receipts that differ only in their run id."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from services.sleep.receipt import parse_receipt
from shared.db.memories import content_hash
from shared.vectors.bulk_pairs import cluster_count
from shared.vectors.pgvector import PgVectorStore

from .conftest import NOW, SleepLlm, pair_count, run_sleep, sleep_service

SIG, DIM, OWNER, MEMORIES = "test:bulk:64", 64, "o-bulk", 1600
TABLES = (
    "memories, memory_embeddings, memory_vec_meta, dream_runs, conflict_reviewed, differentiated_pairs,"
    " conflict_pending, conflict_backlog, entities, entity_relations, entity_mentions, content_history,"
    " llm_audit_logs, settings"
)


def merge_every_third(prompt: str) -> dict[str, Any]:
    decisions = [
        {"pair": i, "action": "merge", "keep": "a", "content": f"Merged {i}."}
        if i % 3 == 0
        else {"pair": i, "action": "keep"}
        for i in range(pair_count(prompt))
    ]
    return {"decisions": decisions}


async def seed(pool: asyncpg.Pool) -> None:
    """1,600 memories (fixed ids and vectors): near-duplicate groups of 2-5 among random ones."""
    rng = np.random.default_rng(21)
    vectors: list[np.ndarray[Any, Any]] = []
    for c in rng.standard_normal((200, DIM)):
        for eps in rng.uniform(0.05, 0.3, int(rng.integers(2, 6))):
            vectors.append(c / np.linalg.norm(c) + eps * rng.standard_normal(DIM) / np.sqrt(DIM))
    vectors += list(rng.standard_normal((MEMORIES - len(vectors), DIM)))
    order = rng.permutation(MEMORIES)
    ids = [uuid.UUID(bytes=rng.bytes(16), version=4) for _ in range(MEMORIES)]
    mems, vecs = [], []
    for n, i in enumerate(order):
        text = f"memory {n} of the seeded corpus"
        created = NOW - timedelta(days=float(rng.uniform(1, 20)))
        mems.append((ids[n], OWNER, "s1", "factual", text, "api", created, created, content_hash(text), SIG, False))
        v = np.asarray(vectors[i], dtype=np.float32)
        vecs.append((ids[n], SIG, OWNER, DIM, v / np.linalg.norm(v)))
    columns = ["id", "owner", "session_id", "type", "content", "source", "created_at", "updated_at", "content_hash",
               "embedding_signature", "needs_reindex"]  # fmt: skip
    await pool.copy_records_to_table("memories", records=mems, columns=columns)
    await pool.copy_records_to_table(
        "memory_embeddings", records=vecs, columns=["memory_id", "signature", "owner", "dim", "embedding"]
    )
    await pool.execute(
        "INSERT INTO memory_vec_meta (store, active_dim, embedding_signature) VALUES ('pgvector', $1, $2)", DIM, SIG
    )


async def one_run(
    pool: asyncpg.Pool,
    nats: EmbeddedNats,
    dsn: str,
    nc: Client,
    llm: SleepLlm,
    monkeypatch: pytest.MonkeyPatch,
    bulk: bool,
) -> dict[str, Any]:
    async def is_large(self: PgVectorStore, signature: str, owner: str) -> bool:
        return bulk

    await pool.execute(f"TRUNCATE {TABLES} CASCADE")
    await seed(pool)
    monkeypatch.setattr(PgVectorStore, "is_large", is_large)
    async with sleep_service(nats, dsn, llm):
        run = await run_sleep(nc, OWNER, timeout=120)
    receipt = parse_receipt(run.receipt or "")
    judged = await pool.fetch("SELECT memory_a, memory_b, outcome FROM conflict_reviewed ORDER BY 1, 2")
    backlog = await pool.fetch("SELECT memory_a, memory_b FROM conflict_backlog ORDER BY 1, 2")
    return {
        "receipt": (receipt.status, receipt.hash12, receipt.inputs, receipt.writes, receipt.llm_used),
        "conflict": run.phases["conflict_resolution"],
        "judged": [tuple(r) for r in judged],
        "backlog": [tuple(r) for r in backlog],
        "states": await pool.fetch("SELECT id, state, content FROM memories ORDER BY id"),
    }


async def test_bulk_and_exact_pair_search_give_the_same_run(
    nats_server: EmbeddedNats,
    pg_dsn: str,
    pool: asyncpg.Pool,
    nc: Client,
    llm: SleepLlm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert cluster_count(MEMORIES) > 3  # the large-owner path really partitions this corpus
    llm.phases["conflict"] = merge_every_third
    exact = await one_run(pool, nats_server, pg_dsn, nc, llm, monkeypatch, bulk=False)
    bulk = await one_run(pool, nats_server, pg_dsn, nc, llm, monkeypatch, bulk=True)
    assert exact["conflict"]["candidates"] > 100 and exact["conflict"]["merge"] > 0
    assert bulk["receipt"] == exact["receipt"]
    assert bulk["conflict"] == exact["conflict"]
    assert bulk["judged"] == exact["judged"] and bulk["backlog"] == exact["backlog"]
    assert bulk["states"] == exact["states"]
