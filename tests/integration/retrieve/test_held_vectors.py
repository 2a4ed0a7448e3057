"""The vector tier ranked from the in-memory index equals pgvector's exact search on real PostgreSQL:
on a generated corpus (some memories not embedded yet), for many visibilities, after new memories,
vectors written and marked by the embed path (first embeddings and re-embeddings after an edit),
archival, session moves and deletes; an owner over the cap, or an index held for another signature,
leaves the ranking to the store; a hybrid search through the service reports pgvector serving and
its engine status counts the held rankings."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from services.retrieve.adapters import keyword_memory
from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.keyword_memory import HeldRanking, KeywordIndexes
from services.retrieve.logic.held_vectors import HeldVectors
from services.retrieve.logic.packed_vectors import PackedVectors
from shared.db.memories import content_hash
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from shared.vectors.pgvector import PgVectorStore, mark_embedded
from shared.vectors.port import VectorItem, VectorQuery
from tests.support.stack import run_services

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.integration

SIG = "test:held-vectors:8"
DIM = 8
WORDS = ["apple", "river", "guitar", "camping", "lake", "coffee"]
SESSIONS = ("s1", "s2", None)
TYPES = ("factual", "episodic")
VIEWS = [
    dict(session_id=None, types=None, retention_days=365),
    dict(session_id="s1", types=None, retention_days=365),
    dict(session_id="s2", types=("factual",), retention_days=365),
    dict(session_id=None, types=("episodic",), retention_days=10),
]


def _vector(rnd: random.Random) -> list[float]:
    v = np.array([rnd.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
    if rnd.random() < 0.1:  # some memories share a vector: ties are broken by id
        v = np.arange(1, DIM + 1, dtype=np.float32)
    return v.tolist()


async def _seed(pool: asyncpg.Pool, owner_id: str, n: int, rnd: random.Random) -> list[uuid.UUID]:
    now = datetime.now(UTC)
    records, ids = [], []
    for _ in range(n):
        mid = uuid.uuid4()
        text = " ".join(rnd.choice(WORDS) for _ in range(3)) + f" #{mid.hex[:6]}"
        at = now - timedelta(days=rnd.randrange(0, 30))
        records.append(
            (mid, owner_id, rnd.choice(TYPES), text, "api", at, at, content_hash(text), rnd.choice(SESSIONS))
        )
        ids.append(mid)
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "memories",
            records=records,
            columns=[
                "id",
                "owner",
                "type",
                "content",
                "source",
                "created_at",
                "updated_at",
                "content_hash",
                "session_id",
            ],
        )
    return ids


async def _embed(
    pool: asyncpg.Pool, store: PgVectorStore, owner_id: str, ids: list[uuid.UUID], rnd: random.Random
) -> None:
    """What the embed service does: write the vectors, then mark the memories embedded."""
    await store.upsert(SIG, [VectorItem(memory_id=str(i), owner=owner_id, vector=_vector(rnd)) for i in ids])
    rows = await pool.fetch("SELECT id::text, content_hash FROM memories WHERE id = ANY($1::uuid[])", ids)
    await mark_embedded(pool, [(r[0], r[1]) for r in rows], SIG)


async def _compare(
    pool: asyncpg.Pool, store: PgVectorStore, index: KeywordIndexes, owner_id: str, rnd: random.Random, rounds: int
) -> int:
    """Held rankings equal the store's exact ones for ``rounds`` questions; returns how many were held."""
    held = 0
    for i in range(rounds):
        v = VIEWS[i % len(VIEWS)]
        vis = tiers.Visibility(owner_id, v["session_id"], v["types"], v["retention_days"])  # type: ignore[arg-type]
        ranking = await tiers.keyword_search(pool, vis, rnd.choice(WORDS), 10, None, match_budget=0, memory=index)
        assert isinstance(ranking, HeldRanking)
        q = np.array(_vector(rnd), dtype=np.float32)
        limit = rnd.choice([3, 10, 1000])
        got = index.nearest(ranking, SIG, q, limit)
        assert got is not None
        want = await store.search_exact(
            SIG,
            VectorQuery(
                owner=owner_id, vector=q, limit=limit, session_id=vis.session_id,
                types=list(vis.types) if vis.types else None, created_after=vis.created_after(),
            ),
            q,
            limit,
        )  # fmt: skip
        assert [m for m, _ in got] == [h.memory_id for h in want], (got[:8], want[:8], v, limit)
        assert [s for _, s in got] == pytest.approx([h.score for h in want], abs=1e-5)
        held += 1
    return held


async def _store_and_owner(pool: asyncpg.Pool, **store: int) -> tuple[PgVectorStore, str]:
    """pgvector ready for ``SIG`` (``store``: its keyword arguments) and a fresh owner."""
    vectors = PgVectorStore(pool, **store)
    await vectors.ensure(SIG, DIM)
    return vectors, f"hv-{uuid.uuid4().hex[:8]}"


async def _built_then_searched(pool: asyncpg.Pool, index: KeywordIndexes, vis: tiers.Visibility) -> HeldRanking:
    """A search that (re)builds the owner's index, then one the built index serves."""
    await tiers.keyword_search(pool, vis, "apple", 10, None, memory=index)
    await index.settle()
    ranking = await tiers.keyword_search(pool, vis, "apple", 10, None, memory=index)
    assert isinstance(ranking, HeldRanking)
    return ranking


async def test_held_vectors_rank_as_the_exact_store_through_writes(pool: asyncpg.Pool) -> None:
    rnd = random.Random(3)
    store, who = await _store_and_owner(pool)
    ids = await _seed(pool, who, 400, rnd)
    await _embed(pool, store, who, ids[:300], rnd)  # the last 100 are not embedded yet
    index = KeywordIndexes(pool, inline_rows=50)
    index.vectors_of = SIG
    await tiers.keyword_search(pool, tiers.Visibility(who, None, None, 365), "apple", 10, None, memory=index)
    await index.settle()
    assert await _compare(pool, store, index, who, rnd, 12) == 12

    await _embed(pool, store, who, ids[300:], rnd)  # embedded later: the mark brings their vectors in
    assert await _compare(pool, store, index, who, rnd, 8) == 8

    # an edit, then its re-embedding (needs_reindex set by the edit, cleared by the mark)
    await pool.execute(
        "UPDATE memories SET content = content || ' edited', content_hash = 'x' || content_hash,"
        " needs_reindex = true WHERE id = ANY($1::uuid[])",
        ids[:20],
    )
    await _embed(pool, store, who, ids[:20], rnd)
    new = await _seed(pool, who, 30, rnd)  # new memories, embedded at once
    await _embed(pool, store, who, new, rnd)
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", ids[20:40])
    await pool.execute("UPDATE memories SET session_id = 's1' WHERE id = ANY($1::uuid[])", ids[40:60])
    assert await _compare(pool, store, index, who, rnd, 12) == 12

    await pool.execute("DELETE FROM memories WHERE id = ANY($1::uuid[])", ids[60:70])  # a rebuild
    await tiers.keyword_search(pool, tiers.Visibility(who, None, None, 365), "apple", 10, None, memory=index)
    await index.settle()
    assert await _compare(pool, store, index, who, rnd, 8) == 8
    assert index.vector_counts["held"] == 40


async def test_an_owner_over_the_exact_cap_is_held_packed_and_ranks_near_the_exact_store(pool: asyncpg.Pool) -> None:
    """Past ``exact_vector_rows_max`` the vectors are held packed (built so, or packed when a catch-up
    crosses it): every result is one the view sees, with its own cosine, and a miss against pgvector's
    exact ranking only displaces a near tie."""
    rnd = random.Random(4)
    store, who = await _store_and_owner(pool)
    ids = await _seed(pool, who, 300, rnd)
    await _embed(pool, store, who, ids, rnd)
    index = KeywordIndexes(pool, inline_rows=50, exact_vector_rows_max=320)
    index.vectors_of = SIG
    vis = tiers.Visibility(who, None, None, 365)
    await _built_then_searched(pool, index, vis)
    assert isinstance(index._held[who].index.vectors, HeldVectors)  # under the exact cap
    new = await _seed(pool, who, 60, rnd)  # crosses it: the catch-up packs the held vectors
    await _embed(pool, store, who, new, rnd)
    for i in range(12):
        v = VIEWS[i % len(VIEWS)]
        vis = tiers.Visibility(who, v["session_id"], v["types"], v["retention_days"])  # type: ignore[arg-type]
        ranking = await tiers.keyword_search(pool, vis, rnd.choice(WORDS), 10, None, memory=index)
        assert isinstance(ranking, HeldRanking)
        q = np.array(_vector(rnd), dtype=np.float32)
        got = index.nearest(ranking, SIG, q, 10)
        assert got is not None
        every = await store.search_exact(
            SIG,
            VectorQuery(
                owner=who, vector=q, limit=1000, session_id=vis.session_id,
                types=list(vis.types) if vis.types else None, created_after=vis.created_after(),
            ),
            q,
            1000,
        )  # fmt: skip
        cosine = {h.memory_id: h.score for h in every}  # every memory the view sees, with its cosine
        assert len(got) == min(10, len(every))
        assert all(m in cosine and s == pytest.approx(cosine[m], abs=0.02) for m, s in got)
        tenth = every[len(got) - 1].score
        assert all(cosine[m] >= tenth - 0.02 for m, _ in got)  # nothing far below the exact cut
    assert isinstance(index._held[who].index.vectors, PackedVectors)
    assert index.vector_counts["held:packed"] == 12


async def test_over_the_cap_or_another_signature_the_store_ranks(pool: asyncpg.Pool) -> None:
    rnd = random.Random(5)
    store, who = await _store_and_owner(pool)
    ids = await _seed(pool, who, 120, rnd)
    await _embed(pool, store, who, ids, rnd)
    vis = tiers.Visibility(who, None, None, 365)
    q = np.array(_vector(rnd), dtype=np.float32)

    small = KeywordIndexes(pool, vector_rows_max=100)
    small.vectors_of = SIG
    ranking = await _built_then_searched(pool, small, vis)
    assert small.nearest(ranking, SIG, q, 10) is None
    assert small.vector_counts["store:over_cap"] == 1

    index = KeywordIndexes(pool)
    index.vectors_of = SIG
    ranking = await _built_then_searched(pool, index, vis)
    assert index.nearest(ranking, "test:other:8", q, 10) is None
    assert index.vector_counts["store:other_signature"] == 1
    # the active signature changes: the next search rebuilds the index for it in the background
    index.vectors_of = "test:other:8"
    ranking = await _built_then_searched(pool, index, vis)
    assert index.nearest(ranking, "test:other:8", q, 10) == []  # held: no vector of that signature yet


async def test_a_hybrid_search_through_the_service_ranks_held_vectors(
    retrieve_svc: ServiceContext, nc: Client, pool: asyncpg.Pool, vec_meta: str
) -> None:
    who = owner()
    await put_values(pool, who, {"keywordIndex": "memory"})
    near = await put(pool, who, "we went camping by the lake", vector=unit(1, 0, 0, 0))
    await put(pool, who, "coffee at noon", vector=unit(0, 1, 0, 0))
    embed = await ScriptedEmbed({"camping trip": unit(1, 0.1, 0, 0)}).start(nc, vec_meta)
    try:
        ask = RetrieveRequest(owner=who, query="camping trip", strategy="hybrid")
        first: RetrieveResult = await call(nc, "retrieve", ask, timeout=10)
        again: RetrieveResult = await call(nc, "retrieve", ask, timeout=10)
    finally:
        await embed.stop()
    for result in (first, again):
        assert result.memories[0].id == near
        assert any(t.tier == "pgvector" and t.served for t in result.tiers)
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=who), timeout=10)
    assert "vectors held" in status.keyword_tier, status.keyword_tier


@pytest.mark.parametrize("exact_max_rows", [10_000, 50], ids=["exact", "hnsw"])
async def test_unchecked_nearest_checked_by_the_index_equal_the_checked_statement(
    pool: asyncpg.Pool, exact_max_rows: int
) -> None:
    """pgvector's nearest without visibility, filtered by the in-memory index, are the checked
    statement's nearest, with archived and expired memories and other sessions' among them."""
    rnd = random.Random(9)
    store, who = await _store_and_owner(pool, exact_max_rows=exact_max_rows)
    ids = await _seed(pool, who, 300, rnd)
    await _embed(pool, store, who, ids, rnd)
    await store.ensure_owner(SIG, who)
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", ids[:30])
    await pool.execute("UPDATE memories SET expires_at = now() - interval '1 s' WHERE id = ANY($1::uuid[])", ids[30:40])
    index = KeywordIndexes(pool, vector_rows_max=0)  # held without vectors: the store ranks them
    index.vectors_of = SIG
    vis = tiers.Visibility(who, None, None, 20)
    await tiers.keyword_search(pool, vis, "apple", 10, None, memory=index)
    await index.settle()
    assert index.is_held(who) and not index.holds_vectors(who)
    for _ in range(10):
        ranking = await tiers.keyword_search(pool, vis, rnd.choice(WORDS), 10, None, memory=index)
        assert isinstance(ranking, HeldRanking)
        q = np.array(_vector(rnd), dtype=np.float32)
        unchecked = await store.search_unchecked(SIG, who, q, 300)
        assert len(unchecked) == 300  # every vector of the owner, visible or not
        seen = index.visible_among(ranking, [h.memory_id for h in unchecked])
        assert seen is not None
        kept = [h.memory_id for h, ok in zip(unchecked, seen, strict=True) if ok]
        want = await store.search(
            SIG, VectorQuery(owner=who, vector=q, limit=len(kept) or 1, created_after=vis.created_after())
        )
        assert kept == [h.memory_id for h in want]
        assert 100 < len(kept) < 260  # retention, archival and expiry each took some


async def test_a_hybrid_search_of_an_owner_over_the_cap_checks_pgvector_s_nearest_in_memory(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig, vec_meta: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the cap, an unnarrowed hybrid search keeps only the visible of pgvector's unchecked
    nearest (an archived memory nearest to the question is not answered); a search narrowed to a
    session asks the checked statement."""
    monkeypatch.setenv("MEMORYD_RETRIEVE_VECTOR_ROWS_MAX", "0")
    who = owner()
    await put_values(pool, who, {"keywordIndex": "memory"})
    gone = await put(pool, who, "an old camping trip", vector=unit(1, 0, 0, 0))
    near = await put(pool, who, "we went camping by the lake", vector=unit(1, 0.2, 0, 0), session_id="s1")
    other = await put(pool, who, "coffee at noon", vector=unit(0, 1, 0, 0))
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = $1::uuid", gone)
    embed = await ScriptedEmbed({"camping trip": unit(1, 0.05, 0, 0)}).start(nc, vec_meta)
    try:
        async with run_services(["retrieve"], config):
            answers: list[RetrieveResult] = []
            for session in (None, None, "s1"):
                ask = RetrieveRequest(owner=who, query="camping trip", strategy="hybrid", session_id=session)
                answers.append(await call(nc, "retrieve", ask, timeout=10))
            status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=who), timeout=10)
    finally:
        await embed.stop()
    for result in answers:
        assert gone not in [m.id for m in result.memories]
        assert result.memories[0].id == near and result.memories[0].vec_rank == 1
        assert any(t.tier == "pgvector" and t.served for t in result.tiers)
    assert other in [m.id for m in answers[1].memories]
    # the first search built the index (checked statement), the second checked pgvector's nearest
    # in memory, the third was narrowed to a session (checked statement)
    assert "vectors unchecked 1" in status.keyword_tier, status.keyword_tier


async def test_vectors_locked_away_are_left_to_the_store_and_read_again_later(
    pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that waits on a lock of ``memory_embeddings`` goes on without vectors (the keyword
    tier is not held up); the next searches do not rebuild at once, one after ``VECTOR_RETRY_S`` does."""
    rnd = random.Random(11)
    store, who = await _store_and_owner(pool)
    await _embed(pool, store, who, await _seed(pool, who, 40, rnd), rnd)
    index = KeywordIndexes(pool)
    index.vectors_of = SIG
    vis = tiers.Visibility(who, None, None, 365)
    async with pool.acquire() as holder, holder.transaction():
        await holder.execute("LOCK TABLE memory_embeddings IN ACCESS EXCLUSIVE MODE")
        ranking = await tiers.keyword_search(pool, vis, "apple", 10, None, memory=index)  # built inline
    assert isinstance(ranking, HeldRanking) and not index.holds_vectors(who)
    await _built_then_searched(pool, index, vis)
    assert not index.holds_vectors(who)  # no rebuild yet
    monkeypatch.setattr(keyword_memory, "VECTOR_RETRY_S", 0.0)
    await _built_then_searched(pool, index, vis)
    assert index.holds_vectors(who)
