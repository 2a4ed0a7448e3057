"""One contract, two adapters: every test body runs on pgvector (real PostgreSQL, full
precision and ``halfvec`` storage) and on Qdrant (qdrant-client local mode), like qdrant-client's
congruence tests.

Each test uses its own owners and signature, so tests sharing the module's database never
see each other's vectors (global-scope memories included).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient

from memoryd.errors import ValidationFailed
from shared.vectors.common import exact_pairs
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorItem, VectorQuery, VectorStore
from shared.vectors.qdrant import QdrantStore
from shared.vectors.signature import stored_signature, vector_quantization

from .world import World, near, unit

DIM = 16


@pytest.fixture(params=["pgvector", "pgvector-half", "qdrant"])
async def store(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> AsyncIterator[VectorStore]:
    if request.param.startswith("pgvector"):
        yield PgVectorStore(pool, exact_max_rows=200, pair_cluster_size=100)
        return
    client = AsyncQdrantClient(location=":memory:")
    try:
        yield QdrantStore(client, f"t{uuid.uuid4().hex[:8]}", exact_max_points=50)
    finally:
        await client.close()


@pytest.fixture
async def world(request: pytest.FixtureRequest, pool: asyncpg.Pool, store: VectorStore) -> World:
    half = request.node.callspec.params["store"] == "pgvector-half"  # the signature names the storage
    signature = stored_signature(f"test:{uuid.uuid4().hex[:8]}:{DIM}", "half" if half else "none")
    await store.ensure(signature, DIM)
    return World(pool, store, signature)


def owner() -> str:
    return f"o-{uuid.uuid4().hex[:8]}"


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory_id for h in hits]


async def test_search_ranks_like_exact_cosine(world: World) -> None:
    rng = np.random.default_rng(1)
    alice = owner()
    for v in unit(rng, DIM, 60):
        world.add(alice, v)
    assert await world.flush() == 60
    for q in unit(rng, DIM, 5):
        hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=10))
        want = world.expected(alice, q, 10)
        assert ids(hits) == [i for i, _ in want]
        assert [h.score for h in hits] == pytest.approx([s for _, s in want], abs=1e-4)
    # a list vector works as well as numpy, and limit bounds the answer
    hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=[1.0] + [0.0] * 15, limit=3))
    assert ids(hits) == [i for i, _ in world.expected(alice, np.eye(DIM, dtype=np.float32)[0], 3)]


async def test_never_returns_another_owners_vectors(world: World) -> None:
    rng = np.random.default_rng(2)
    alice, mallory = owner(), owner()
    q = unit(rng, DIM)
    mine = [world.add(alice, v) for v in unit(rng, DIM, 8)]
    theirs = [world.add(mallory, near(rng, q, eps)) for eps in (0.0, 0.01, 0.05)]  # closer than anything of alice
    await world.flush()
    for include_global in (True, False):
        hits = await world.store.search(
            world.signature, VectorQuery(owner=alice, vector=q, limit=50, include_global=include_global)
        )
        assert set(ids(hits)) == set(mine)
    hits = await world.store.search(world.signature, VectorQuery(owner=mallory, vector=q, limit=2))
    assert ids(hits) == theirs[:2]


async def test_global_scope_included_only_when_asked(world: World) -> None:
    rng = np.random.default_rng(3)
    alice, admin = owner(), owner()
    q = unit(rng, DIM)
    mine = world.add(alice, unit(rng, DIM))
    shared = world.add(admin, near(rng, q), scope="global")
    private = world.add(admin, near(rng, q, 0.01))
    await world.flush()
    with_global = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=10))
    assert ids(with_global) == [shared, mine]
    without = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, limit=10, include_global=False)
    )
    assert ids(without) == [mine]
    assert private not in ids(with_global)


async def test_session_filter(world: World) -> None:
    rng = np.random.default_rng(4)
    alice, admin = owner(), owner()
    s1 = [world.add(alice, v, session_id="s1") for v in unit(rng, DIM, 4)]
    s2 = [world.add(alice, v, session_id="s2") for v in unit(rng, DIM, 4)]
    none = world.add(alice, unit(rng, DIM))
    own_global_s2 = world.add(alice, unit(rng, DIM), session_id="s2", scope="global")
    other_global = world.add(admin, unit(rng, DIM), scope="global")
    await world.flush()
    q = unit(rng, DIM)
    strict = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, limit=50, session_id="s1", include_global=False)
    )
    assert set(ids(strict)) == set(s1)
    assert ids(strict) == [i for i, _ in world.expected(alice, q, 50, session_id="s1", include_global=False)]
    loose = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=50, session_id="s1"))
    assert set(ids(loose)) == {*s1, own_global_s2, other_global}
    everything = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=50))
    assert set(ids(everything)) == {*s1, *s2, none, own_global_s2, other_global}


async def test_agent_filter(world: World) -> None:
    """An agent's search sees that agent's vectors of the owner (and global ones), in any session,
    never another agent's; with a session too, both must match; without an agent, all of them."""
    rng = np.random.default_rng(41)
    alice, admin = owner(), owner()
    support = [world.add(alice, v, agent_id="support") for v in unit(rng, DIM, 4)]
    support_s1 = world.add(alice, unit(rng, DIM), agent_id="support", session_id="s1")
    coder = [world.add(alice, v, agent_id="coder") for v in unit(rng, DIM, 4)]
    coder_s1 = world.add(alice, unit(rng, DIM), agent_id="coder", session_id="s1")
    none = world.add(alice, unit(rng, DIM))
    own_global_coder = world.add(alice, unit(rng, DIM), agent_id="coder", scope="global")
    other_global = world.add(admin, unit(rng, DIM), scope="global")
    mallory_support = world.add(owner(), unit(rng, DIM), agent_id="support")
    await world.flush()
    q = unit(rng, DIM)
    strict = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, limit=50, agent_id="support", include_global=False)
    )
    assert set(ids(strict)) == {*support, support_s1}
    assert ids(strict) == [i for i, _ in world.expected(alice, q, 50, agent_id="support", include_global=False)]
    loose = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=50, agent_id="support"))
    assert set(ids(loose)) == {*support, support_s1, own_global_coder, other_global}
    both = await world.store.search(
        world.signature,
        VectorQuery(owner=alice, vector=q, limit=50, agent_id="coder", session_id="s1", include_global=False),
    )
    assert ids(both) == [coder_s1]
    everything = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=50))
    assert set(ids(everything)) == {*support, support_s1, *coder, coder_s1, none, own_global_coder, other_global}
    assert mallory_support not in ids(everything) + ids(loose)
    # a short answer is the agent's nearest, exactly
    top = VectorQuery(owner=alice, vector=q, limit=2, agent_id="coder", include_global=False)
    want = world.expected(alice, q, 2, agent_id="coder", include_global=False)
    assert ids(await world.store.search(world.signature, top)) == [i for i, _ in want]


async def test_archived_summary_and_expired_are_excluded(world: World) -> None:
    rng = np.random.default_rng(5)
    alice = owner()
    now = datetime.now(UTC)
    q = unit(rng, DIM)
    live = world.add(alice, near(rng, q, 0.3))
    future = world.add(alice, near(rng, q, 0.4), expires_at=now + timedelta(days=1))
    archived = world.add(alice, near(rng, q, 0.0), state="archived")
    summary = world.add(alice, near(rng, q, 0.01), state="summary")
    expired = world.add(alice, near(rng, q, 0.02), expires_at=now - timedelta(hours=1))
    await world.flush()
    hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=10))
    assert set(ids(hits)) == {live, future}
    # the expiry cut-off is the query's ``now`` when given
    earlier = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, limit=10, now=now - timedelta(hours=2))
    )
    assert set(ids(earlier)) == {live, future, expired}
    later = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, limit=10, now=now + timedelta(days=2))
    )
    assert set(ids(later)) == {live}
    # archiving later (row + payload mirrored) removes it from search
    await world.set_state(alice, [live], "archived")
    hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=10))
    assert ids(hits) == [future]
    assert archived not in ids(earlier) and summary not in ids(earlier)


async def test_types_and_created_after(world: World) -> None:
    rng = np.random.default_rng(6)
    alice = owner()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    old = world.add(alice, unit(rng, DIM), created_at=t0, memory_type="episodic")
    new_fact = world.add(alice, unit(rng, DIM), created_at=t0 + timedelta(days=10))
    new_epi = world.add(alice, unit(rng, DIM), created_at=t0 + timedelta(days=20), memory_type="episodic")
    await world.flush()
    q = unit(rng, DIM)
    recent = await world.store.search(
        world.signature, VectorQuery(owner=alice, vector=q, created_after=t0 + timedelta(days=1))
    )
    assert set(ids(recent)) == {new_fact, new_epi}
    episodic = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, types=["episodic"]))
    assert set(ids(episodic)) == {old, new_epi}
    assert await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, types=[])) == []
    assert await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=0)) == []


async def test_delete_removes_every_signature_and_counts(world: World) -> None:
    rng = np.random.default_rng(7)
    alice, mallory = owner(), owner()
    other_sig = world.signature + ":v2"
    await world.store.ensure(other_sig, DIM)
    keep = world.add(alice, unit(rng, DIM))
    gone = [world.add(alice, v) for v in unit(rng, DIM, 3)]
    await world.flush()
    assert await world.store.upsert(other_sig, [world.rows[i].item() for i in [keep, *gone]]) == 4
    # another owner cannot delete alice's vectors
    assert await world.store.delete(mallory, gone) == 0
    assert await world.store.delete(alice, gone) == 6  # 3 memories x 2 signatures
    assert await world.store.delete(alice, gone) == 0  # idempotent
    for sig in (world.signature, other_sig):
        hits = await world.store.search(sig, VectorQuery(owner=alice, vector=unit(rng, DIM)))
        assert ids(hits) == [keep]
    with pytest.raises(ValidationFailed):
        await world.store.delete(alice, ["not-a-uuid"])


async def test_signatures_never_mix(world: World) -> None:
    rng = np.random.default_rng(8)
    alice = owner()
    sig_b = world.signature + ":b"
    await world.store.ensure(sig_b, DIM)
    q = unit(rng, DIM)
    in_a = world.add(alice, unit(rng, DIM))
    await world.flush()
    only_b = world.add(alice, near(rng, q, 0.0))
    await world.flush(sig_b)
    hits_a = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q))
    hits_b = await world.store.search(sig_b, VectorQuery(owner=alice, vector=q))
    assert ids(hits_a) == [in_a]
    assert ids(hits_b) == [only_b]
    status = await world.store.status(sig_b)
    assert status.healthy and status.vectors == 1 and status.dim == DIM
    assert await world.store.drop(sig_b) == 1
    assert ids(await world.store.search(world.signature, VectorQuery(owner=alice, vector=q))) == [in_a]


async def test_upsert_validates_and_replaces(world: World) -> None:
    rng = np.random.default_rng(9)
    alice = owner()
    mid = world.add(alice, unit(rng, DIM))
    await world.flush()
    bad: list[object] = [np.ones(DIM + 1), [float("nan")] * DIM, np.zeros(DIM)]
    for vector in bad:
        with pytest.raises(ValidationFailed):
            await world.store.upsert(world.signature, [VectorItem(memory_id=mid, owner=alice, vector=vector)])  # type: ignore[arg-type]
    with pytest.raises(ValidationFailed):
        await world.store.upsert(world.signature, [VectorItem(memory_id="x", owner=alice, vector=np.ones(DIM))])
    # re-embedding replaces the vector (one per memory and signature)
    q = unit(rng, DIM)
    assert await world.store.upsert(world.signature, [VectorItem(memory_id=mid, owner=alice, vector=q)]) == 1
    hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q))
    assert ids(hits) == [mid] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert (await world.store.status(world.signature)).vectors == 1
    assert await world.store.upsert(world.signature, []) == 0
    with pytest.raises(ValidationFailed):
        await world.store.update_payload(alice, [mid], state="deleted")


async def test_neighbours_finds_planted_pairs_within_one_owner(world: World) -> None:
    rng = np.random.default_rng(10)
    alice, bob = owner(), owner()
    planted = set()
    for _ in range(4):
        v = unit(rng, DIM)
        a, b = world.add(alice, v), world.add(alice, near(rng, v))
        planted.add((min(a, b), max(a, b)))
    for v in unit(rng, DIM, 30):
        world.add(alice, v)
    lone = unit(rng, DIM)
    twin_of_bob = world.add(alice, lone)
    bob_twin = world.add(bob, near(rng, lone))  # cross-owner near-duplicate: never a pair
    bob_global = world.add(bob, near(rng, lone, 0.01), scope="global")  # another owner's global: never a pair
    v = unit(rng, DIM)
    world.add(alice, v)
    world.add(alice, near(rng, v), state="archived")  # archived partner: never a pair
    await world.flush()
    pairs = await world.store.neighbours(world.signature, alice, min_score=0.95)
    assert {(a, b) for a, b, _ in pairs} == planted
    assert all(a < b and s >= 0.95 for a, b, s in pairs)
    assert [s for *_, s in pairs] == sorted((s for *_, s in pairs), reverse=True)
    assert all(twin_of_bob not in (a, b) for a, b, _ in pairs)
    # bob's own memories (his global one included) do pair with each other
    bob_pairs = await world.store.neighbours(world.signature, bob, min_score=0.95)
    assert [(a, b) for a, b, _ in bob_pairs] == [(min(bob_twin, bob_global), max(bob_twin, bob_global))]
    assert len(await world.store.neighbours(world.signature, alice, min_score=0.95, limit=2)) == 2
    future = datetime.now(UTC) + timedelta(days=1)
    assert await world.store.neighbours(world.signature, alice, min_score=0.95, since=future) == []


async def test_large_owner_paths_agree_with_exact(world: World) -> None:
    """Over the store's small-owner threshold: index search (pgvector: HNSW with iterative
    scan) and index-based neighbours (probing only what changed ``since``), against numpy."""
    rng = np.random.default_rng(11)
    alice, bob = owner(), owner()
    centers = unit(rng, DIM, 20)
    for c in centers[rng.integers(0, 20, 2000)]:
        world.add(alice, near(rng, c, 1.0))
    for v in unit(rng, DIM, 1000):
        world.add(bob, v)
    await world.flush()
    await world.analyze()
    recall = []
    for q in unit(rng, DIM, 10):
        hits = await world.store.search(world.signature, VectorQuery(owner=alice, vector=q, limit=10))
        want = {i for i, _ in world.expected(alice, q, 10)}
        assert len(hits) == 10 and {world.rows[i].owner for i in ids(hits)} == {alice}
        recall.append(len(want & set(ids(hits))) / 10)
    assert np.mean(recall) >= 0.9
    since = datetime.now(UTC)
    planted = set()
    for c in centers[:3]:
        a, b = world.add(alice, c), world.add(alice, near(rng, c, 0.001))
        planted.add((min(a, b), max(a, b)))
    world.add(bob, near(rng, centers[0], 0.001))  # bob's twin of alice's: not alice's pair
    await world.flush()
    pairs = await world.store.neighbours(world.signature, alice, min_score=0.9999, per_memory=3, since=since)
    assert {(a, b) for a, b, _ in pairs} == planted


@pytest.mark.parametrize("probing_groups", [50, 3], ids=["many-probes", "few-probes"])
async def test_neighbours_in_bulk_equal_one_search_per_memory(world: World, probing_groups: int) -> None:
    """Over the small-owner threshold ``neighbours`` answers for every probing memory at once
    (pgvector: one partitioned pass, ~11 clusters over these ~370 memories, or, when under 5 %
    of them probe, one HNSW probe each; Qdrant: batched kNN queries) and finds the pairs that
    one ``search`` per probing memory finds, same scores.

    The partitioned pass is approximate: a pair whose memories share none of their nearest
    clusters is not seen, and the probe takes its next partner instead. Over 2,000 orderings
    of these vectors (the partition follows the row order, here random ids), 1.6 % of the
    passes differed from the exact answer, by at most 2 of its ~140 pairs. So the many-probes
    case is held to 95 % of the exact pairs (and 95 % of its own pairs exact), the HNSW and
    Qdrant paths to the pairs of one search per probe."""
    signature = stored_signature(f"test:{uuid.uuid4().hex[:8]}:64", vector_quantization(world.signature))
    dim, per_memory, min_score = 64, 2, 0.85
    await world.store.ensure(signature, dim)
    rng = np.random.default_rng(12)
    alice = owner()
    groups = [
        [near(rng, c, eps) for eps in rng.uniform(0.1, 0.45, int(rng.integers(2, 6)))] for c in unit(rng, dim, 50)
    ]
    for group in groups:  # pairwise cosine ~0.8-0.99 within a group
        for v in group[: len(group) // 2]:
            world.add(alice, v)
    for v in unit(rng, dim, 150):
        world.add(alice, v)
    await world.flush(signature)
    since = datetime.now(UTC)
    probes = [world.add(alice, v) for group in groups[:probing_groups] for v in group[len(group) // 2 :]]
    probes += [world.add(alice, v) for v in unit(rng, dim, 40 if probing_groups > 3 else 2)]
    await world.flush(signature)
    await world.analyze()
    one_by_one: dict[tuple[str, str], float] = {}
    for mid in probes:
        query = VectorQuery(owner=alice, vector=world.rows[mid].vector, limit=per_memory + 1, include_global=False)
        hits = [h for h in await world.store.search(signature, query) if h.memory_id != mid][:per_memory]
        for h in hits:
            if h.score >= min_score:
                key = (min(mid, h.memory_id), max(mid, h.memory_id))
                one_by_one[key] = max(h.score, one_by_one.get(key, h.score))
    pairs = await world.store.neighbours(
        signature, alice, min_score=min_score, per_memory=per_memory, limit=10_000, since=since
    )
    found = {(a, b): s for a, b, s in pairs}
    assert len(one_by_one) > (30 if probing_groups > 3 else 2)
    assert all(s >= min_score for s in found.values())
    partitioned = isinstance(world.store, PgVectorStore) and probing_groups > 3
    if not partitioned:
        assert set(found) == set(one_by_one)
        assert all(abs(s - one_by_one[key]) < 1e-4 for key, s in found.items())
    else:
        ids = [i for i, row in world.rows.items() if row.owner == alice]
        vectors = np.stack([world.rows[i].vector for i in ids])
        probing = np.isin(ids, probes)
        truth = {
            (a, b): s
            for a, b, s in exact_pairs(ids, vectors, probing, min_score=min_score, per_memory=per_memory, limit=10_000)
        }
        agreed = found.keys() & truth.keys()
        assert len(agreed) >= 0.95 * len(truth) and len(agreed) >= 0.95 * len(found)
        assert all(abs(found[key] - truth[key]) < 1e-4 for key in agreed)
    await world.store.drop(signature)
