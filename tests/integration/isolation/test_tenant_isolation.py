"""Tenant isolation as a property: every read path returns only what the caller's owner may see.

NATS runs with authentication on (``tests.support.auth``); the test acts as the application role,
as each owner's bound user and as the operator. One world per module, written through the
services and embedded into pgvector and Qdrant (local mode): owners are near misses of each other
(``ana``, ``Ana``, ``ana:team``), session ids repeat, each memory carries a unique canary.
Hypothesis varies caller, session, types, query and limit, and checks retrieve and inject (every
strategy, both stores, both subjects; 403 for a bound user asking for another owner), list,
export and get (404), the sleep worker's candidate reads and the search tiers called directly,
and reindex of one owner: nothing of another owner, no foreign canary. The write paths are
``test_write_isolation``'s. ``MEMORYD_ISOLATION_EXAMPLES`` (default 25) and ``_SEED`` configure it.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client
from nats.aio.msg import Msg

from memoryd.codec import decode, encode
from memoryd.errors import Forbidden, NotFound
from memoryd.rpc import call
from memoryd.schemas import ChatEvent, ChatMessage, EmbedJob
from memoryd.schemas.memory import (
    MemoryCreateRequest,
    MemoryExportRequest,
    MemoryGetRequest,
    MemoryListRequest,
    MemoryRecord,
)
from memoryd.schemas.ops import ReindexRequest, ReindexResult
from memoryd.schemas.retrieval import InjectRequest, InjectResult, RetrieveRequest, RetrieveResult
from memoryd.subjects import CHAT_EVENTS, EMBED_JOBS, MSG_ID_HEADER, owner_rpc_subject
from services.retrieve.adapters.postgres import Visibility, keyword_search
from services.sleep.adapters import conflict_store, demotion_store
from shared.settings.env import ServiceConfig
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorHit, VectorQuery, VectorStore
from shared.vectors.qdrant import QdrantStore
from shared.vectors.registry import VectorStores, open_stores
from tests.support.auth import AuthBus, run_as_roles, start_auth_bus
from tests.support.eventually import eventually

from .helpers import CANARY, canary, property_settings, tenant_user

EXAMPLES = int(os.environ.get("MEMORYD_ISOLATION_EXAMPLES", "25"))
SEED = int(os.environ.get("MEMORYD_ISOLATION_SEED", "8"))
PROPERTY = property_settings(EXAMPLES)

OWNERS = ("ana", "Ana", "ana:team", "ana@x", "bo-1")
NEAR_MISSES = ("an", "ana_", "ANA", "ana:", "ana:team:x", "bo", "bo-10", "zed")
GLOBALS = (("ana:team", "s1"), ("bo-1", None))  # owners that also publish a scope=global memory
SESSIONS = ("s1", "s2", "s3")
TYPES = ("factual", "episodic", "procedural", "semantic")
WORDS = ("kestrel", "invoice", "marathon", "violin", "paella", "kubernetes", "sailing", "orchid", "chess")
HOSTILE = ("%", "_", "ana%", "' OR owner <> '", "*", "\\", "-kestrel", "OR", "ana:team", "@")
API_MEMORIES = 5  # per owner, plus one chat event of two turns
RETENTION_DAYS = 36_500

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
owners = st.one_of(
    st.sampled_from(OWNERS),
    st.sampled_from(OWNERS),  # world owners twice as often: their data is what could leak
    st.sampled_from(NEAR_MISSES),
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_\-:@]{0,30}\Z"),
)
sessions = st.one_of(st.none(), st.sampled_from(SESSIONS), _text)
type_lists = st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))


# --- the world -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mem:
    id: str
    owner: str
    session_id: str | None
    scope: str
    memory_type: str
    canary: str
    vector: list[float] = field(repr=False)


@dataclass(frozen=True)
class World:
    memories: tuple[Mem, ...]
    signature: str

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.memories]

    @property
    def canaries(self) -> list[str]:
        return [m.canary for m in self.memories]

    def own(self, owner: str, session: str | None = None, types: Sequence[str] | None = None) -> set[str]:
        """The owner's memories (of the session, of the types): what list, export and get show."""
        return {
            m.id
            for m in self.memories
            if m.owner == owner and session in (None, m.session_id) and (types is None or m.memory_type in types)
        }

    def visible(self, owner: str, session: str | None, types: Sequence[str] | None) -> set[str]:
        """What retrieval may return: the owner's memories plus every ``scope=global`` one."""
        shared = {m.id for m in self.memories if m.scope == "global" and (types is None or m.memory_type in types)}
        return self.own(owner, session, types) | shared

    def leaks(self, payload: object, allowed: set[str]) -> set[str]:
        """Canaries in ``payload`` (any response, JSON-encoded) of memories outside ``allowed``."""
        text = payload if isinstance(payload, str) else msgspec.json.encode(payload).decode()
        return set(CANARY.findall(text)) - {m.canary for m in self.memories if m.id in allowed}


def as_list(value: Any) -> list[float]:
    """pgvector's codec gives a ``Vector`` (``to_numpy``) or a numpy array, depending on its version."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32).tolist()


async def seed(nc: Client, operator: Client, rng: random.Random) -> int:
    """Write the world through the services; return how many memories it has."""
    for owner in OWNERS:
        for _ in range(API_MEMORIES):
            w1, w2 = rng.sample(WORDS, 2)
            session = rng.choice((None, *SESSIONS))
            req = MemoryCreateRequest(
                owner=owner,
                content=f"{owner} wrote about {w1} and {w2} {canary(rng)}",
                memory_type=rng.choice(TYPES),  # type: ignore[arg-type]
                session_id=session,
                scope="session" if session and rng.random() < 0.3 else "apiKey",
            )
            await call(nc, "memory.create", req)
        w1, w2 = rng.sample(WORDS, 2)
        event = ChatEvent(
            event_id=f"ev-{owner}",
            owner=owner,
            session_id=rng.choice(SESSIONS),
            occurred_at=datetime.now(UTC),
            messages=[
                ChatMessage(role="user", content=f"I spent the weekend on {w1} {canary(rng)}"),
                ChatMessage(role="assistant", content=f"Nice! And how is the {w2} going? {canary(rng)}"),
            ],
        )
        await nc.jetstream().publish(CHAT_EVENTS, encode(event), headers={MSG_ID_HEADER: event.event_id})
    for owner, session in GLOBALS:
        req = MemoryCreateRequest(
            owner=owner,
            content=f"Handbook for everyone: the {rng.choice(WORDS)} policy {canary(rng)}",
            memory_type="procedural",
            session_id=session,
            scope="global",
        )
        await call(operator, "admin.memory.create", req)
    return len(OWNERS) * (API_MEMORIES + 2) + len(GLOBALS)


async def read_world(pool: asyncpg.Pool, stores: VectorStores) -> World:
    signature = await pool.fetchval("SELECT embedding_signature FROM memory_vec_meta WHERE store = 'pgvector'")
    rows = await pool.fetch(
        "SELECT m.id, m.owner, m.session_id, m.scope, m.type, m.content, e.embedding FROM memories m"
        " JOIN memory_embeddings e ON e.memory_id = m.id AND e.signature = $1 ORDER BY m.id",
        signature,
    )
    memories = tuple(
        Mem(
            id=str(r["id"]),
            owner=r["owner"],
            session_id=r["session_id"],
            scope=r["scope"],
            memory_type=r["type"],
            canary=CANARY.findall(r["content"])[0],
            vector=as_list(r["embedding"]),
        )
        for r in rows
    )
    return World(memories=memories, signature=signature)


# --- fixtures: one stack per module ------------------------------------------------------------
@pytest.fixture(scope="module")
def stack_env() -> Iterator[None]:
    """Service settings read from the environment at setup (the real model, no CI-load fallbacks)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORYD_EMBED_SOURCE", "local")
        mp.setenv("MEMORYD_INGEST_CLEANUP_INTERVAL_S", "0")
        mp.setenv("MEMORYD_RETRIEVE_EMBED_TIMEOUT_S", "20")  # a loaded CI runner must not turn a tier off
        mp.setenv("MEMORYD_RETRIEVE_STORE_TIMEOUT_S", "20")
        yield


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBus]:
    """nats-server with ``memoryd up``'s users, plus one owner-bound user per world owner."""
    bound = {tenant_user(i): [owner] for i, owner in enumerate(OWNERS)}
    auth = start_auth_bus(Path(tmp_path_factory.mktemp("iso-auth")), bound)
    yield auth
    auth.server.stop()


QDRANT = {"MEMORYD_QDRANT_URL": ":memory:", "MEMORYD_QDRANT_COLLECTION": f"iso{uuid.uuid4().hex[:8]}"}


@pytest.fixture(scope="module")
def qdrant_config(bus: AuthBus, pg_dsn: str) -> ServiceConfig:
    return bus.config("operator", pg_dsn, QDRANT)


@pytest.fixture(scope="module")
async def client(bus: AuthBus) -> AsyncIterator[Client]:
    """The application role: any owner, on the unbound subjects."""
    nc = await bus.connect_as("client", "isolation-app")
    yield nc
    await nc.close()


@pytest.fixture(scope="module")
async def operator(bus: AuthBus) -> AsyncIterator[Client]:
    nc = await bus.connect_as("operator", "isolation-operator")
    yield nc
    await nc.close()


@pytest.fixture(scope="module")
async def bound(bus: AuthBus) -> AsyncIterator[dict[str, Client]]:
    """Each world owner's own owner-bound connection, by owner."""
    conns = {owner: await bus.connect_as(tenant_user(i)) for i, owner in enumerate(OWNERS)}
    yield conns
    for nc in conns.values():
        await nc.close()


@pytest.fixture(scope="module")
async def stores(qdrant_config: ServiceConfig, pool: asyncpg.Pool) -> AsyncIterator[VectorStores]:
    """The module's stores; the local Qdrant client is the one the in-process services use."""
    opened = await open_stores(qdrant_config, pool)
    yield opened
    await opened.close()


@pytest.fixture(scope="module")
async def world(
    stack_env: None,
    bus: AuthBus,
    pg_dsn: str,
    client: Client,
    operator: Client,
    pool: asyncpg.Pool,
    stores: VectorStores,
) -> AsyncIterator[World]:
    """ingest + embed run for the whole module; the world is written once and fully embedded."""
    async with run_as_roles(["ingest", "embed"], bus, pg_dsn, QDRANT):
        total = await seed(client, operator, random.Random(SEED))

        async def embedded() -> bool:
            count, waiting = await pool.fetchrow("SELECT count(*), count(*) FILTER (WHERE needs_reindex) FROM memories")
            return bool(count == total and waiting == 0)

        await eventually(embedded, "every memory embedded")
        built = await read_world(pool, stores)
        assert stores.qdrant is not None
        assert len(built.memories) == total
        assert (await stores.qdrant.status(built.signature)).vectors == total
        yield built


@pytest.fixture(params=["pgvector", "qdrant"])
async def served_by(request: pytest.FixtureRequest, world: World, bus: AuthBus, pg_dsn: str) -> AsyncIterator[str]:
    """A retrieve service whose first vector tier is pgvector (no Qdrant configured) or Qdrant."""
    async with run_as_roles(["retrieve"], bus, pg_dsn, QDRANT if request.param == "qdrant" else None):
        yield request.param


# --- retrieve and inject -----------------------------------------------------------------------
@dataclass(frozen=True)
class Ask:
    owner: str
    session: str | None
    types: list[str] | None
    query: str
    limit: int


def asks(world: World) -> st.SearchStrategy[Ask]:
    word = st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(world.canaries),  # another owner's secret, asked for by name
        st.sampled_from(HOSTILE),
        st.sampled_from(OWNERS),
        _text,
    )
    query = st.lists(word, min_size=1, max_size=4).map(" ".join).filter(lambda q: bool(q.strip()))
    return st.builds(Ask, owner=owners, session=sessions, types=type_lists, query=query, limit=st.integers(1, 40))


def check_tiers(res: RetrieveResult, strategy: str, vector_tier: str) -> None:
    """The planned tiers served: no fallback (a query of no words skips full-text, said so)."""
    assert all(f.endswith(":keyword_unusable") for f in res.fallbacks), res.fallbacks
    served = {t.tier for t in res.tiers if t.served}
    if strategy == "exact":
        assert served == {"recent"}, res.tiers
        return
    assert vector_tier in served, res.tiers
    if strategy == "semantic":
        assert all(m.tier == vector_tier for m in res.memories)


Route = tuple[Client, str | None]  # a connection and its subject for the owner (None: unbound)


def routes(ask_owner: str, client: Client, bound: dict[str, Client], op: str) -> list[Route]:
    """The application role's unbound subject, and the owner's own bound one when it has a user."""
    own = [(bound[ask_owner], owner_rpc_subject(op, ask_owner))] if ask_owner in bound else []
    return [(client, None), *own]


async def refused_to_a_stranger(data: st.DataObject, bound: dict[str, Client], op: str, req: Any) -> None:
    """Another owner's bound user asking for ``req.owner`` on its own subject: 403, nothing shown."""
    stranger = data.draw(st.sampled_from(sorted(o for o in bound if o != req.owner)))
    with pytest.raises(Forbidden) as refused:
        await call(bound[stranger], op, req, subject=owner_rpc_subject(op, stranger))
    assert refused.value.code == 403 and not CANARY.search(refused.value.description)


@PROPERTY
@given(data=st.data())
async def test_retrieve_and_inject_return_only_visible_memories(
    data: st.DataObject, served_by: str, world: World, client: Client, bound: dict[str, Client]
) -> None:
    ask = data.draw(asks(world))
    visible = world.visible(ask.owner, ask.session, ask.types)
    for (nc, subject), strategy in [
        (route, strategy)
        for route in routes(ask.owner, client, bound, "retrieve")
        for strategy in ("exact", "semantic", "hybrid")
    ]:
        req = RetrieveRequest(
            owner=ask.owner,
            query=ask.query,
            session_id=ask.session,
            strategy=strategy,  # type: ignore[arg-type]
            types=ask.types,  # type: ignore[arg-type]
            limit=ask.limit,
            max_tokens=8000,
        )
        res: RetrieveResult = await call(nc, "retrieve", req, subject=subject)
        got = {m.id for m in res.memories}
        assert got <= visible, (strategy, got - visible)
        assert not world.leaks(res, visible)
        check_tiers(res, strategy, served_by)
        if strategy != "hybrid" and ask.limit >= len(visible):
            assert got == visible, (strategy, visible - got)
        assert bool(got) == bool(visible)
    await refused_to_a_stranger(data, bound, "retrieve", req)

    strategy = data.draw(st.sampled_from(["exact", "semantic", "hybrid"]))
    inject_req = InjectRequest(
        owner=ask.owner,
        messages=[ChatMessage(role="user", content=ask.query)],
        session_id=ask.session,
        strategy=strategy,  # type: ignore[arg-type]
        max_tokens=8000,
    )
    may_see = world.visible(ask.owner, ask.session, None)
    for nc, subject in routes(ask.owner, client, bound, "inject"):
        injected: InjectResult = await call(nc, "inject", inject_req, subject=subject)
        assert {m.id for m in injected.injected} <= may_see
        echoed = [m.content.replace(ask.query, "") for m in injected.messages]  # the query may name a canary
        assert not world.leaks([injected.injected, injected.context, injected.retrieval, echoed], may_see)
    await refused_to_a_stranger(data, bound, "inject", inject_req)


# --- list, get, export -------------------------------------------------------------------------
async def export_all(nc: Client, owner: str, page: int, subject: str | None = None) -> list[MemoryRecord]:
    """Every page of the owner's export, followed by ``next_after_id``."""
    records: list[MemoryRecord] = []
    after: str | None = None
    while True:
        req = MemoryExportRequest(owner=owner, after_id=after, limit=page)
        res = await call(nc, "memory.export", req, subject=subject)
        records += [msgspec.json.decode(line, type=MemoryRecord) for line in res.lines.splitlines()]
        if res.next_after_id is None:
            return records
        after = res.next_after_id


@PROPERTY
@given(data=st.data())
async def test_list_get_and_export_show_only_the_owners_memories(
    data: st.DataObject, world: World, client: Client, bound: dict[str, Client]
) -> None:
    owner = data.draw(owners)
    session = data.draw(st.one_of(st.none(), st.sampled_from(SESSIONS)))
    memory_type = data.draw(st.one_of(st.none(), st.sampled_from(TYPES)))
    q = data.draw(
        st.one_of(st.none(), st.sampled_from(WORDS), st.sampled_from(world.canaries), st.sampled_from(HOSTILE))
    )
    mine = world.own(owner)

    req = MemoryListRequest(owner=owner, session_id=session, memory_type=memory_type, q=q, limit=1000)  # type: ignore[arg-type]
    expected = world.own(owner, session, [memory_type] if memory_type else None)
    page = data.draw(st.integers(1, 12))
    probes = data.draw(st.lists(st.sampled_from(world.ids), min_size=1, max_size=6, unique=True))
    for nc, subject in routes(owner, client, bound, "memory.list"):
        listed = await call(nc, "memory.list", req, subject=subject)
        got = {r.id for r in listed.memories}
        assert all(r.owner == owner for r in listed.memories)
        assert got <= expected and (q is not None or got == expected) and listed.total == len(got)
        assert not world.leaks(listed, expected)

        bound_subject = subject and owner_rpc_subject("memory.export", owner)
        exported = await export_all(nc, owner, page, bound_subject)
        assert all(r.owner == owner for r in exported)
        assert sorted(r.id for r in exported) == sorted(mine)
        assert not world.leaks(exported, mine)

        get_subject = subject and owner_rpc_subject("memory.get", owner)
        for memory_id in probes:
            get = MemoryGetRequest(owner=owner, id=memory_id)
            if memory_id in mine:
                fetched = await call(nc, "memory.get", get, subject=get_subject)
                assert fetched.memory.owner == owner and fetched.memory.id == memory_id
            else:
                with pytest.raises(NotFound) as missing:
                    await call(nc, "memory.get", get, subject=get_subject)
                assert missing.value.code == 404 and not world.leaks(missing.value.description, set())
    await refused_to_a_stranger(data, bound, "memory.list", req)


# --- the sleep worker's candidate reads and the search tiers, called directly -----------------------
def candidate_stores(pool: asyncpg.Pool, stores: VectorStores, collection: str) -> dict[str, VectorStore]:
    """pgvector and Qdrant, each on its exact path and on its index path (every owner is "large")."""
    assert stores.qdrant is not None
    return {
        "pgvector-exact": stores.pgvector,
        "pgvector-hnsw": PgVectorStore(pool, exact_max_rows=0),
        "qdrant-exact": stores.qdrant,
        "qdrant-knn": QdrantStore(stores.qdrant.client, collection, exact_max_points=0),
    }


@PROPERTY
@given(data=st.data())
async def test_sleep_candidates_and_search_tiers_stay_within_the_owner(
    data: st.DataObject, world: World, pool: asyncpg.Pool, stores: VectorStores, qdrant_config: ServiceConfig
) -> None:
    owner = data.draw(owners)
    mine = world.own(owner)
    min_score = data.draw(st.sampled_from([-1.0, 0.0, 0.3]) | st.floats(-1.0, 1.0))
    per_memory = data.draw(st.integers(1, 6))
    by_store = candidate_stores(pool, stores, qdrant_config.qdrant.collection)
    for name, store in by_store.items():
        pairs = await store.neighbours(world.signature, owner, min_score=min_score, per_memory=per_memory)
        assert {i for a, b, _score in pairs for i in (a, b)} <= mine, name
        assert bool(pairs) or min_score > -1.0 or len(mine) < 2, name

    # what the conflict phase reads for the ids a scan names (here: every id of the world)
    pair_rows, global_ids = await conflict_store.pair_memories(pool, owner, world.ids)
    assert set(pair_rows) | global_ids == mine
    assert set(await conflict_store.contents(pool, owner, world.ids)) == mine
    # the demotion phase's scan of cold memories (everything is "cold" with a cut-off tomorrow)
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    cold, _after = await demotion_store.cold_batch(pool, owner, tomorrow, demotion_store.START, 1000)
    assert {c.id for c in cold} == mine

    probe = data.draw(st.sampled_from(world.memories))  # often another owner's exact vector
    session, types = data.draw(sessions), data.draw(type_lists)
    visible = world.visible(owner, session, types)
    limit = data.draw(st.integers(1, 40))
    query = VectorQuery(owner=owner, vector=probe.vector, limit=limit, session_id=session, types=types)
    hnsw = by_store["pgvector-hnsw"]
    assert isinstance(hnsw, PgVectorStore)
    vec = np.asarray(probe.vector, dtype=np.float32)
    own_only = msgspec.structs.replace(query, include_global=False)
    qdrant = by_store["qdrant-exact"]
    searches: list[tuple[str, Callable[[], Awaitable[list[VectorHit]]]]] = [
        ("pgvector-exact", lambda: stores.pgvector.search_exact(world.signature, query, vec, limit)),
        ("pgvector-hnsw", lambda: hnsw.search_hnsw(world.signature, query, vec, limit)),
        ("qdrant", lambda: qdrant.search(world.signature, query)),
        ("pgvector-own-only", lambda: stores.pgvector.search(world.signature, own_only)),
        ("qdrant-own-only", lambda: qdrant.search(world.signature, own_only)),
    ]
    for name, search in searches:
        hits = {h.memory_id for h in await search()}
        allowed = world.own(owner, session, types) if name.endswith("own-only") else visible
        assert hits <= allowed, name
    words = " ".join(
        data.draw(st.lists(st.sampled_from(WORDS + HOSTILE) | st.sampled_from(world.canaries), min_size=1))
    )
    vis = Visibility(
        owner=owner, session_id=session, types=tuple(types) if types else None, retention_days=RETENTION_DAYS
    )
    assert {memory_id for memory_id, _score in (await keyword_search(pool, vis, words, 50)).ranked} <= visible


# --- reindex -------------------------------------------------------------------------------------
async def test_reindex_of_one_owner_touches_no_other_owner(world: World, pool: asyncpg.Pool, operator: Client) -> None:
    """Every memory needs a vector again; owners are reindexed one at a time, strangers first.
    Each reindex queues exactly its owner's memories, and the others stay untouched until their turn."""
    jobs: list[EmbedJob] = []

    async def tap(msg: Msg) -> None:
        jobs.append(decode(msg.data, EmbedJob))

    sub = await operator.subscribe(EMBED_JOBS, cb=tap)
    await operator.flush()
    await pool.execute("UPDATE memories SET needs_reindex = true")
    written = await embedded_at(pool, world.signature)
    order = [*NEAR_MISSES[:3], *random.Random(SEED).sample(OWNERS, len(OWNERS))]
    done: set[str] = set()
    try:
        for owner in order:  # the module's embed service does the work
            mine, seen = world.own(owner), len(jobs)
            res: ReindexResult = await call(operator, "reindex", ReindexRequest(owner=owner, batch_size=2))
            assert res.queued == len(mine)
            await eventually(lambda seen=seen, res=res: _count(jobs, seen + res.queued), f"{owner}'s jobs")
            assert {j.memory_id for j in jobs[seen:]} == mine and {j.owner for j in jobs[seen:]} <= {owner}
            await eventually(lambda mine=mine: _rewritten(pool, mine), f"{owner}'s vectors")
            done |= mine
            now = await embedded_at(pool, world.signature)
            flagged = await still_flagged(pool)
            assert flagged == set(world.ids) - done, owner
            assert all(now[i] == written[i] for i in flagged), owner
            assert all(now[i] > written[i] for i in mine), owner
    finally:
        await sub.unsubscribe()


async def _count(jobs: list[EmbedJob], n: int) -> bool:
    return len(jobs) >= n


async def _rewritten(pool: asyncpg.Pool, ids: set[str]) -> bool:
    return not (await still_flagged(pool)) & ids


async def still_flagged(pool: asyncpg.Pool) -> set[str]:
    return {str(r["id"]) for r in await pool.fetch("SELECT id FROM memories WHERE needs_reindex")}


async def embedded_at(pool: asyncpg.Pool, signature: str) -> dict[str, datetime]:
    rows = await pool.fetch("SELECT memory_id, created_at FROM memory_embeddings WHERE signature = $1", signature)
    return {str(r["memory_id"]): r["created_at"] for r in rows}
