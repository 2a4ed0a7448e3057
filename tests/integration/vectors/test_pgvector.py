"""pgvector-only behaviour: partial HNSW indexes per signature (vector, and halfvec for a
``:half`` signature), the HNSW path's plan and recall, row-level rules (owner join, FK cascade)
and ``mark_embedded``."""

from __future__ import annotations

import uuid

import asyncpg
import numpy as np
import pytest
from pgvector import Vector

from memoryd.errors import ValidationFailed
from services.ingest.adapters.stores import MemoryStores
from shared.db import memories
from shared.db.pool import init_connection
from shared.vectors import pgvector_sql as sql
from shared.vectors.pgvector import PgVectorStore, mark_embedded
from shared.vectors.port import VectorItem, VectorQuery
from shared.vectors.signature import stored_signature, vector_quantization

from .world import World, near, unit


def sig() -> str:
    return f"test:{uuid.uuid4().hex[:8]}:32"


async def _plan(pool: asyncpg.Pool, signature: str, query: VectorQuery, own_index: bool = False) -> str:
    vec = np.asarray(query.vector, dtype=np.float32)
    half = vector_quantization(signature) == "half"
    text, args = sql.search(
        signature, vec.size, query, Vector(vec), query.limit, hnsw=True, half=half, own_index=own_index
    )
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(sql.hnsw_settings(100, 20_000))
        rows = await conn.fetch("EXPLAIN " + text, *args)
    return "\n".join(r[0] for r in rows)


async def test_hnsw_path_uses_the_index_and_matches_exact(pool: asyncpg.Pool) -> None:
    """A few thousand rows: the HNSW (iterative scan) top-10 agrees with exact search, for the
    full-precision signature and the halfvec one, and the plan really uses the partial index."""
    rng = np.random.default_rng(21)
    signature, half_sig = sig(), stored_signature(sig(), "half")
    full = PgVectorStore(pool, exact_max_rows=100)
    world = World(pool, full, signature)
    alice, bob = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    centers = unit(rng, 32, 30)
    for c in centers[rng.integers(0, 30, 2500)]:
        world.add(alice, near(rng, c, 1.0))
    for c in centers[rng.integers(0, 30, 1500)]:
        world.add(bob, near(rng, c, 1.0))
    await world.flush()
    assert await full.upsert(half_sig, [r.item() for r in world.rows.values()]) == 4000
    await full.ensure(signature, 32)  # built over existing rows (CREATE INDEX CONCURRENTLY)
    await full.ensure(half_sig, 32)
    await world.analyze()
    status = await full.status(signature)
    assert status.healthy and status.vectors == 4000 and status.dim == 32
    assert sql.index_name(signature, 32, False) in status.detail and "storage: vector" in status.detail
    half_status = await full.status(half_sig)
    assert half_status.vectors == 4000 and half_status.signature == half_sig
    assert sql.index_name(half_sig, 32, True) in half_status.detail and "storage: halfvec" in half_status.detail
    for signature_, half in ((signature, False), (half_sig, True)):
        plan = await _plan(pool, signature_, VectorQuery(owner=alice, vector=unit(rng, 32), limit=10))
        assert sql.index_name(signature_, 32, half) in plan
        recall = []
        for q in unit(rng, 32, 20):
            query = VectorQuery(owner=alice, vector=q, limit=10)
            hnsw = await full.search_hnsw(signature_, query, q, 10)
            exact = await full.search_exact(signature_, query, q, 10)
            if not half:
                assert [h.memory_id for h in exact] == [i for i, _ in world.expected(alice, q, 10)]
            assert all(world.rows[h.memory_id].owner == alice for h in hnsw)
            recall.append(len({h.memory_id for h in hnsw} & {h.memory_id for h in exact}) / 10)
        assert np.mean(recall) >= 0.9, (half, recall)
    # a filter that leaves fewer than ``limit`` rows for the HNSW scan falls back to exact
    few = [world.add(alice, unit(rng, 32), session_id="rare") for _ in range(3)]
    await world.flush()
    hits = await full.search(signature, VectorQuery(owner=alice, vector=unit(rng, 32), session_id="rare"))
    assert await full.is_large(signature, alice)
    assert {h.memory_id for h in hits} == set(few)


async def test_a_large_owner_with_a_small_share_gets_an_index_of_its_own(pool: asyncpg.Pool) -> None:
    """``ensure_owner``: an owner over ``exact_max_rows`` holding at most the configured share of
    the signature gets its own partial HNSW index, its searches use it (plan) and agree with
    exact search; a small owner and an owner holding most of the graph get none; ``drop``
    removes it with the signature's."""
    rng = np.random.default_rng(24)
    signature = sig()
    store = PgVectorStore(pool, exact_max_rows=300, owner_index_max_share=0.4)
    world = World(pool, store, signature)
    big, small, mid = (f"{p}-{uuid.uuid4().hex[:6]}" for p in ("big", "small", "mid"))
    centers = unit(rng, 32, 20)
    for owner, n in ((big, 1500), (small, 200), (mid, 600)):
        for c in centers[rng.integers(0, 20, n)]:
            world.add(owner, near(rng, c, 1.0))
    for _ in range(1700):  # other owners' rows, so big holds 1500 / 4000 of the signature
        world.add(f"o-{uuid.uuid4().hex[:6]}", unit(rng, 32))
    await world.flush()
    await store.ensure(signature, 32)
    assert await store.ensure_owner(signature, big)
    assert await store.ensure_owner(signature, big)  # idempotent
    assert not await store.ensure_owner(signature, small)  # not large: exact search serves it
    assert await store.ensure_owner(signature, mid)
    await world.analyze()
    own = sql.owner_index_name(signature, big, 32, False)
    assert own in (await store.status(signature)).detail
    plan = await _plan(pool, signature, VectorQuery(owner=big, vector=unit(rng, 32), limit=10), True)
    assert own in plan
    fresh = PgVectorStore(pool, exact_max_rows=300)  # another process: finds the index by its route query
    recall = []
    for q in unit(rng, 32, 20):
        query = VectorQuery(owner=big, vector=q, limit=10)
        hits = await fresh.search(signature, query)
        assert [h.memory_id for h in await fresh.search_exact(signature, query, q, 10)] == [
            i for i, _ in world.expected(big, q, 10)
        ]
        recall.append(len({h.memory_id for h in hits} & {i for i, _ in world.expected(big, q, 10)}) / 10)
    assert await fresh._route(signature, big, 32) == (True, True)
    assert np.mean(recall) >= 0.9, recall
    # the sleep phase's pair search (one partitioned pass, no index) agrees with exact pairs
    approx = await fresh.neighbours(signature, big, min_score=0.5, per_memory=3, limit=200)
    exact_pairs = await PgVectorStore(pool, exact_max_rows=10**9).neighbours(
        signature, big, min_score=0.5, per_memory=3, limit=200
    )
    assert approx and len({(a, b) for a, b, _ in approx} & {(a, b) for a, b, _ in exact_pairs}) >= 0.9 * len(
        exact_pairs
    )
    crowded = PgVectorStore(pool, exact_max_rows=300, owner_index_max_share=0.1)
    other = f"x-{uuid.uuid4().hex[:6]}"
    for c in centers[rng.integers(0, 20, 500)]:
        world.add(other, near(rng, c, 1.0))
    await world.flush()
    assert not await crowded.ensure_owner(signature, other)  # 500 of 4500 > 10 %: the shared graph serves it
    await store.drop(signature)
    assert await pool.fetchval(sql.INDEX_VALID, own) is None


async def test_an_owner_index_is_dropped_when_its_owner_is_cleared(pool: asyncpg.Pool) -> None:
    """Deleting an owner's memories (ingest's ``MemoryStores.delete``) drops its own HNSW index
    once it holds at most half of ``exact_max_rows`` memories, not before; other owners' indexes
    stay; searches then take the exact path and still answer."""
    rng = np.random.default_rng(25)
    signature = sig()
    store = PgVectorStore(pool, exact_max_rows=200)
    world = World(pool, store, signature)
    cleared, kept = (f"{p}-{uuid.uuid4().hex[:6]}" for p in ("cleared", "kept"))
    centers = unit(rng, 32, 10)
    for owner in (cleared, kept):
        for c in centers[rng.integers(0, 10, 400)]:
            world.add(owner, near(rng, c, 1.0))
    for _ in range(800):
        world.add(f"o-{uuid.uuid4().hex[:6]}", unit(rng, 32))
    await world.flush()
    await store.ensure(signature, 32)
    assert await store.ensure_owner(signature, cleared) and await store.ensure_owner(signature, kept)
    names = {o: sql.owner_index_name(signature, o, 32, False) for o in (cleared, kept)}
    stores = MemoryStores(pool, [], store)
    ids = [i for i, r in world.rows.items() if r.owner == cleared]
    await stores.delete(cleared, ids[:250])  # 150 left: above half of 200, the index stays
    assert await pool.fetchval(sql.INDEX_VALID, names[cleared]) is True
    assert await store.shrink_owner(cleared) == []
    await stores.delete(cleared, ids[250:])
    assert await pool.fetchval(sql.INDEX_VALID, names[cleared]) is None
    assert await pool.fetchval(sql.INDEX_VALID, names[kept]) is True
    assert await store.search(signature, VectorQuery(owner=cleared, vector=unit(rng, 32))) == []
    assert await store._route(signature, cleared, 32) == (False, False)  # the exact path serves it now
    q = unit(rng, 32)
    hits = await store.search(signature, VectorQuery(owner=kept, vector=q, limit=10))
    assert len(hits) == 10 and all(world.rows[h.memory_id].owner == kept for h in hits)
    await store.drop(signature)


async def test_hnsw_scan_settings_per_connection_or_per_transaction(pool: asyncpg.Pool, pg_dsn: str) -> None:
    """Pools from ``create_pool`` carry the HNSW settings from connect (one statement per
    search); any other pool, or a store with other settings, gets them by ``SET LOCAL`` in a
    transaction. Both paths give the same hits."""
    rng = np.random.default_rng(23)
    signature = sig()
    tuned = PgVectorStore(pool, exact_max_rows=100)
    world = World(pool, tuned, signature)
    owner = f"a-{uuid.uuid4().hex[:6]}"
    centers = unit(rng, 32, 10)
    for c in centers[rng.integers(0, 10, 800)]:
        world.add(owner, near(rng, c, 1.0))
    await world.flush()
    await tuned.ensure(signature, 32)
    await world.analyze()
    plain_pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2, init=init_connection)
    try:
        plain, other_ef = PgVectorStore(plain_pool, exact_max_rows=100), PgVectorStore(pool, ef_search=40)
        for q in unit(rng, 32, 5):
            query = VectorQuery(owner=owner, vector=q, limit=20)
            hits = await tuned.search_hnsw(signature, query, q, 20)
            assert len(hits) == 20
            assert await plain.search_hnsw(signature, query, q, 20) == hits
            assert len(await other_ef.search_hnsw(signature, query, q, 20)) == 20
    finally:
        await plain_pool.close()
    assert (tuned._sessions_tuned, plain._sessions_tuned, other_ef._sessions_tuned) == (True, False, False)


async def test_signature_is_quoted_data_and_ensure_is_idempotent(pool: asyncpg.Pool) -> None:
    rng = np.random.default_rng(22)
    nasty = "x'; DROP TABLE memories; --\\" + uuid.uuid4().hex[:6]
    store = PgVectorStore(pool)
    await store.ensure(nasty, 8)
    await store.ensure(nasty, 8)
    names = [r["indexname"] for r in await pool.fetch(sql.INDEXES_OF, sql.index_prefix(nasty))]
    assert names == [sql.index_name(nasty, 8, False)]
    predicate = await pool.fetchval("SELECT pg_get_indexdef($1::regclass)", names[0])
    assert predicate.endswith("WHERE (signature = " + "'" + nasty.replace("'", "''") + "'::text)")
    world = World(pool, store, nasty)
    mid = world.add("o-nasty", unit(rng, 8))
    await world.flush()
    hits = await store.search(nasty, VectorQuery(owner="o-nasty", vector=world.rows[mid].vector))
    assert [h.memory_id for h in hits] == [mid]
    assert await pool.fetchval("SELECT to_regclass('memories') IS NOT NULL")
    with pytest.raises(ValidationFailed):
        await store.ensure("bad\x00sig", 8)
    with pytest.raises(ValidationFailed):
        await store.ensure(nasty, 0)
    with pytest.raises(ValidationFailed, match="already holds 8-dimensional"):
        await PgVectorStore(pool).ensure(nasty, 16)
    assert await store.drop(nasty) == 1
    assert await pool.fetch(sql.INDEXES_OF, sql.index_prefix(nasty)) == []
    assert "no hnsw index" in (await store.status(nasty)).detail


async def test_rows_follow_memories(pool: asyncpg.Pool) -> None:
    """Vectors are written only for existing memories of the item's owner, disappear with
    the memory (FK cascade), and a query of another dimension is refused."""
    rng = np.random.default_rng(23)
    store = PgVectorStore(pool)
    signature = sig()
    world = World(pool, store, signature)
    alice = f"a-{uuid.uuid4().hex[:6]}"
    kept, doomed = world.add(alice, unit(rng, 32)), world.add(alice, unit(rng, 32))
    await world.flush()
    ghost = VectorItem(memory_id=str(uuid.uuid4()), owner=alice, vector=unit(rng, 32))
    stolen = VectorItem(memory_id=kept, owner="mallory", vector=unit(rng, 32))
    assert await store.upsert(signature, [ghost, stolen]) == 0
    async with pool.acquire() as conn:
        receipt = (await memories.delete(conn, alice, [doomed])).receipt
    assert receipt.pgvector_vectors == 1
    hits = await store.search(signature, VectorQuery(owner=alice, vector=unit(rng, 32)))
    assert [h.memory_id for h in hits] == [kept]
    with pytest.raises(ValidationFailed):
        await store.search(signature, VectorQuery(owner=alice, vector=unit(rng, 16)))
    assert await store.update_payload(alice, [kept], state="archived") == 0  # memories row is the truth


async def test_mark_embedded_only_where_content_is_unchanged(pool: asyncpg.Pool) -> None:
    owner = f"a-{uuid.uuid4().hex[:6]}"
    same = await memories.insert(pool, owner=owner, memory_type="factual", content="I like tea", source="api")
    edited = await memories.insert(pool, owner=owner, memory_type="factual", content="I like coffee", source="api")
    embedded = [(same.id, same.content_hash), (edited.id, edited.content_hash)]
    await pool.execute(
        "UPDATE memories SET content = 'I like cocoa', content_hash = $2 WHERE id = $1",
        uuid.UUID(edited.id),
        memories.content_hash("I like cocoa"),
    )
    assert await mark_embedded(pool, embedded, "local:minilm:384") == 1
    after = {
        m.id: m for m in [await memories.get(pool, owner, same.id), await memories.get(pool, owner, edited.id)] if m
    }
    assert after[same.id].needs_reindex is False and after[same.id].embedding_signature == "local:minilm:384"
    assert after[edited.id].needs_reindex is True and after[edited.id].embedding_signature is None
    assert await mark_embedded(pool, [], "local:minilm:384") == 0


async def test_exact_search_reads_all_vectors_when_the_nearest_are_not_visible(pool: asyncpg.Pool) -> None:
    """The exact path checks visibility on the owner's 3 x limit nearest vectors first: when the
    nearest 40 are archived it asks again over all of them, and the answer is still exact."""
    rng = np.random.default_rng(5)
    signature = sig()
    store = PgVectorStore(pool)
    world = World(pool, store, signature)
    owner = f"x-{uuid.uuid4().hex[:6]}"
    q = unit(rng, 32)
    hidden = [world.add(owner, near(rng, q, 0.05)) for _ in range(40)]  # the 40 nearest
    for v in unit(rng, 32, 60):
        world.add(owner, v)
    await world.flush()
    await world.set_state(owner, hidden, "archived")
    query = VectorQuery(owner=owner, vector=q.tolist(), limit=10)
    got = [h.memory_id for h in await store.search_exact(signature, query, q, 10)]
    assert got == [i for i, _ in world.expected(owner, q, 10)] and not set(got) & set(hidden)
    # a smaller limit: the same
    few = VectorQuery(owner=owner, vector=q.tolist(), limit=2)
    want = [i for i, _ in world.expected(owner, q, 2)]
    assert [h.memory_id for h in await store.search_exact(signature, few, q, 2)] == want


def test_an_exact_answer_is_complete_when_all_vectors_were_read_or_enough_were_visible() -> None:
    assert sql.exact_is_complete([{"fetched": 12, "visible": 3}], 10, 30)  # the owner has 12 vectors
    assert sql.exact_is_complete([{"fetched": 30, "visible": 10}], 10, 30)
    assert not sql.exact_is_complete([{"fetched": 30, "visible": 9}], 10, 30)
    assert not sql.exact_is_complete([], 10, 30)  # nothing visible among the nearest
    assert sql.exact_is_complete([], 10, None)  # every vector was read
