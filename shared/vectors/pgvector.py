"""Tier 1: vectors in PostgreSQL (``memory_embeddings``), searched with pgvector.

One row per (memory, signature) in an untyped ``vector`` column, or ``halfvec`` for a signature
ending in ``:half`` (``common.stored_signature``: half the bytes); each signature has a partial
HNSW index on ``embedding::vector(dim)`` (or ``embedding_half::halfvec(dim)``) ``WHERE signature =
'<sig>'``, built by ``ensure``. Queries repeat the cast and name the signature (and an owner with
its own index) as literals, so the planner can use the partial index. ``search`` picks its path by
the owner's row count (cached): up to ``exact_max_rows`` the owner's rows by exact distance, above
it HNSW with iterative scan, falling back to exact when a selective filter leaves fewer than
``limit`` hits. Large owners get their own partial index (``ensure_owner``, dropped again by
``shrink_owner``). Filters join ``memories``, so there is no payload to mirror; global memories of
other owners come from a small exact branch. ``mark_embedded`` clears ``needs_reindex`` only where
the content hash is still the embedded one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np
from cachetools import TTLCache
from msgspec import UNSET, UnsetType
from pgvector import Vector

from memoryd.errors import DependencyDown, ValidationFailed

from ..db.advisory import advisory_lock
from ..observability.logging import get_logger
from . import pgvector_sql as sql
from .bulk_pairs import CLUSTER_SIZE, bulk_pairs
from .common import (
    as_uuid,
    as_vector,
    aware,
    best_pairs,
    check_dim,
    check_half,
    check_items,
    check_patch,
    check_signature,
    clamp_limit,
    exact_pairs,
    merge_pairs,
)
from .port import Pair, StoreStatus, VectorHit, VectorItem, VectorQuery
from .signature import vector_quantization

log = get_logger(__name__)

#: Owners with at most this many vectors (of one signature) are searched exactly (measured, above).
DEFAULT_EXACT_MAX_ROWS = 5_000
#: An exact search checks visibility on this many times ``limit`` of the owner's nearest vectors
#: first. Measured (limit 100): 2,273 vectors 2.1 ms with or without fresh planner statistics,
#: against 1.7 ms joining all the owner's rows with them and 630 ms without (a nested loop);
#: 5,025 vectors 2.8-3.1 ms against 3.3-4.0 ms; probing every row of 4,500: ~6 ms.
EXACT_NEAREST_SHARE = 3
#: A large owner gets its own HNSW index while its rows are at most this share of the signature's.
DEFAULT_OWNER_INDEX_MAX_SHARE = 0.5
_WRITE_CHUNK = 500
_PROBE_CHUNK = 128
#: An incremental run whose probes are at most this share of a large owner's memories asks
#: the HNSW index once per probe (~1.5 ms each) instead of making the whole partitioned pass.
PROBE_SHARE_FOR_HNSW = 0.05
_SIZE_TTL_S = 60.0
_SIZE_OWNERS = 10_000  # (signature, owner) sizes kept per process, least recently used dropped
_BUILD_TIMEOUT_S = 6 * 3600.0  # an HNSW build over a large table takes minutes (35-60 s per 100k rows)

_CONNECTION_ERRORS = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, TimeoutError)


class PgVectorStore:
    """The ``VectorStore`` port on PostgreSQL + pgvector (tier 1)."""

    name = "pgvector"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        exact_max_rows: int = DEFAULT_EXACT_MAX_ROWS,
        ef_search: int = sql.DEFAULT_EF_SEARCH,
        max_scan_tuples: int = sql.DEFAULT_MAX_SCAN_TUPLES,
        owner_index_max_share: float = DEFAULT_OWNER_INDEX_MAX_SHARE,
        pair_cluster_size: int = CLUSTER_SIZE,
    ) -> None:
        self.pool = pool
        self.exact_max_rows = exact_max_rows
        self.owner_index_max_share = owner_index_max_share
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples
        self.pair_cluster_size = pair_cluster_size  # mean members per cluster of the bulk pair pass
        self._dims: dict[str, int] = {}
        # (signature, owner) -> (more than exact_max_rows vectors, has a valid index of its own)
        self._routes: TTLCache[tuple[str, str], tuple[bool, bool]] = TTLCache(_SIZE_OWNERS, _SIZE_TTL_S)
        self._sessions_tuned: bool | None = None  # the pool's connections carry session_settings?

    # -- preparation ------------------------------------------------------------------

    async def ensure(self, signature: str, dim: int) -> None:
        """Create the partial HNSW index of ``signature`` (concurrently, once, across processes).

        Over a table that already holds many rows this takes minutes (writes continue
        meanwhile): run it in the background. An index left invalid by an interrupted build
        is dropped and rebuilt by the next call. Over the HNSW
        dimension limit (2000 for vector, 4000 for halfvec) no index is built: search is exact.
        """
        check_signature(signature)
        check_dim(dim)
        held = await self._known_dim(signature)
        if held is not None and held != dim:
            raise ValidationFailed(f"dim: signature {signature!r} already holds {held}-dimensional vectors, not {dim}")
        self._dims[signature] = dim
        half = _half(signature)
        if dim > sql.hnsw_max_dim(half):
            log.warning("pgvector.no_hnsw_index", signature=signature, dim=dim, half=half)
            return
        name = sql.index_name(signature, dim, half)
        async with self._conn() as conn, advisory_lock(conn, sql.lock_key(signature)):
            valid = await conn.fetchval(sql.INDEX_VALID, name)
            if valid is False:
                await conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"', timeout=_BUILD_TIMEOUT_S)
            if valid is not True:
                await conn.execute(sql.create_index(signature, dim, half), timeout=_BUILD_TIMEOUT_S)
                log.info("pgvector.index_created", signature=signature, dim=dim, index=name)

    async def ensure_owner(self, signature: str, owner: str) -> bool:
        """Build the owner's own partial HNSW index if it should have one; return whether it has one.

        It should once the owner has more than ``exact_max_rows`` vectors of ``signature`` and
        at most ``owner_index_max_share`` of all of them. Built concurrently (seconds per 10k
        rows; writes go on), under an advisory lock per owner, so concurrent callers wait
        and then find it built. Cheap when nothing is to be done (the route is cached).
        """
        check_signature(signature)
        dim, half = await self._known_dim(signature), _half(signature)
        if dim is None or dim > sql.hnsw_max_dim(half):
            return False
        large, own = await self._route(signature, owner, dim)
        if own or not large:
            return own
        async with self._conn() as conn:
            share = await conn.fetchrow(sql.SHARE, signature, owner)
            assert share is not None
            if int(share["mine"]) > self.owner_index_max_share * int(share["total"]):
                return False
            name = sql.owner_index_name(signature, owner, dim, half)
            async with advisory_lock(conn, sql.lock_key(signature, owner)):
                valid = await conn.fetchval(sql.INDEX_VALID, name)
                if valid is False:
                    await conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"', timeout=_BUILD_TIMEOUT_S)
                if valid is not True:
                    await conn.execute(sql.create_owner_index(signature, owner, dim, half), timeout=_BUILD_TIMEOUT_S)
                    log.info("pgvector.owner_index_created", signature=signature, owner=owner, index=name)
        self._routes[(signature, owner)] = (True, True)
        return True

    async def activate(self, signature: str) -> None:
        """Nothing to switch: every search names its signature (kept for the port)."""
        check_signature(signature)

    # -- writes -----------------------------------------------------------------------

    async def upsert(self, signature: str, items: Sequence[VectorItem]) -> int:
        """Write vectors; return how many rows were written.

        Only memories that exist and belong to the item's owner get a vector (a memory
        deleted meanwhile is skipped, not an error). All vectors must share one dimension,
        equal to the signature's when it is known.
        """
        check_signature(signature)
        half = _half(signature)
        kept, vectors, dim = check_items(items, await self._known_dim(signature), half=half)
        if not kept:
            return 0
        written = 0
        statement = sql.upsert(half)
        for start in range(0, len(kept), _WRITE_CHUNK):
            part = slice(start, start + _WRITE_CHUNK)
            args = (
                [as_uuid(i.memory_id) for i in kept[part]],
                [i.owner for i in kept[part]],
                [Vector(v) for v in vectors[part]],
                dim,
                signature,
            )
            # a memory deleted between the join and the FK check: one immediate re-run (kept by hand:
            # the embed write path, no backoff to wait out)
            for attempt in (1, 2):
                try:
                    async with self._conn() as conn:
                        written += len(await conn.fetch(statement, *args))
                    break
                except asyncpg.ForeignKeyViolationError:
                    if attempt == 2:
                        raise
        self._dims.setdefault(signature, dim)
        return written

    async def delete(self, owner: str, memory_ids: Sequence[str]) -> int:
        """Remove the owner's vectors (every signature) of these memories; return how many."""
        ids = [as_uuid(m) for m in memory_ids]
        if not ids:
            return 0
        async with self._conn() as conn:
            status = await conn.execute(sql.DELETE, owner, ids)
        return _rowcount(status)

    async def shrink_owner(self, owner: str) -> list[str]:
        """Drop the owner's own HNSW indexes (every signature) once it holds at most half of
        ``exact_max_rows`` memories; return the names dropped. Called after its memories are
        deleted (ingest's ``MemoryStores.delete``: a cleared owner has none).

        Half, not ``exact_max_rows``: an owner hovering at the threshold is not indexed and
        dropped in turn. Below it the exact path serves the owner, so the index is dead weight
        (an HNSW index keeps its pages after its rows are deleted). One catalog read when the
        owner has no index of its own; dropped concurrently (searches go on).
        """
        async with self._conn() as conn:
            names = [r["indexname"] for r in await conn.fetch(sql.OWNER_INDEXES, sql.owner_index_pattern(owner))]
            keep_from = self.exact_max_rows // 2 + 1
            if not names or int(await conn.fetchval(sql.OWNER_MEMORIES, owner, keep_from)) >= keep_from:
                return []
            for name in names:
                await conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"', timeout=_BUILD_TIMEOUT_S)
                log.info("pgvector.owner_index_dropped", owner=owner, index=name)
        for key in [k for k in self._routes if k[1] == owner]:
            self._routes.pop(key, None)
        return names

    async def point_refs(self, page: int = 1000) -> AsyncIterator[list[tuple[str, str]]]:
        """Vectors whose row is gone (the foreign key cascades, so normally none)."""
        async with self._conn() as conn:
            rows = await conn.fetch(
                "SELECT e.memory_id, e.owner FROM memory_embeddings e"
                " WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.memory_id)"
            )
        for start in range(0, len(rows), page):
            yield [(str(r["memory_id"]), r["owner"]) for r in rows[start : start + page]]

    async def drop(self, signature: str) -> int:
        """Delete every vector of ``signature`` and drop its HNSW indexes; return rows removed."""
        check_signature(signature)
        async with self._conn() as conn:
            for name in await conn.fetch(sql.INDEXES_OF, sql.index_prefix(signature)):
                await conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name["indexname"]}"')
            status = await conn.execute("DELETE FROM memory_embeddings WHERE signature = $1", signature)
        self._dims.pop(signature, None)
        return _rowcount(status)

    async def update_payload(
        self,
        owner: str,
        memory_ids: Sequence[str],
        *,
        state: str | UnsetType = UNSET,
        scope: str | UnsetType = UNSET,
        memory_type: str | UnsetType = UNSET,
        session_id: str | UnsetType | None = UNSET,
        agent_id: str | UnsetType | None = UNSET,
        expires_at: datetime | UnsetType | None = UNSET,
    ) -> int:
        """No-op: pgvector filters by joining ``memories``, which already holds these fields."""
        fields = {"state": state, "scope": scope, "memory_type": memory_type}
        check_patch({k: v for k, v in fields.items() if v is not UNSET})
        return 0

    # -- reads ------------------------------------------------------------------------

    async def search(self, signature: str, query: VectorQuery) -> list[VectorHit]:
        """The owner's nearest visible memories, best first (score = 1 - cosine distance)."""
        check_signature(signature)
        vec = as_vector(query.vector, field="vector")
        half = _half(signature)
        if half:
            check_half(vec, field="vector")
        limit = clamp_limit(query.limit)
        if limit == 0 or (query.types is not None and not query.types):
            return []
        dim = int(vec.size)
        known = await self._known_dim(signature)
        if known is not None and known != dim:
            raise ValidationFailed(f"vector: signature {signature!r} has {known} dimensions, query has {dim}")
        large, own = await self._route(signature, query.owner, dim)
        if large and dim <= sql.hnsw_max_dim(half):
            hits = await self.search_hnsw(signature, query, vec, limit, own_index=own)
            if len(hits) >= limit:
                return hits
        return await self.search_exact(signature, query, vec, limit)

    async def search_unchecked(
        self, signature: str, owner: str, vector: list[float] | np.ndarray[Any, Any], limit: int
    ) -> list[VectorHit]:
        """The owner's ``limit`` nearest vectors, best first, **without** visibility: archived,
        expired, other sessions' and agents' memories among them, other owners' global ones not.
        Only for a caller that checks each hit against the memories it may see."""
        check_signature(signature)
        vec = as_vector(vector, field="vector")
        half = _half(signature)
        if half:
            check_half(vec, field="vector")
        limit = clamp_limit(limit)
        if limit == 0:
            return []
        dim = int(vec.size)
        known = await self._known_dim(signature)
        if known is not None and known != dim:
            raise ValidationFailed(f"vector: signature {signature!r} has {known} dimensions, query has {dim}")
        large, own = await self._route(signature, owner, dim)
        hnsw = large and dim <= sql.hnsw_max_dim(half)
        text = sql.nearest_unchecked(signature, dim, half, hnsw, owner if hnsw and own else None)
        async with self._conn() as conn:
            if hnsw:
                rows = await self._hnsw_fetch(conn, text, Vector(vec), owner, limit)
            else:
                rows = list(await conn.fetch(text, Vector(vec), owner, limit))
        return _hits(rows)

    async def search_exact(
        self, signature: str, query: VectorQuery, vec: np.ndarray[Any, Any], limit: int
    ) -> list[VectorHit]:
        """The owner's rows (plus visible global ones), ordered by exact distance.

        Without a session, agent or type filter, visibility is checked on the owner's
        ``EXACT_NEAREST_SHARE`` x ``limit`` nearest vectors first; with one, or when fewer than
        ``limit`` of those are visible (``sql.exact_is_complete``), on all of them."""

        half = _half(signature)

        async def fetch(nearest: int | None) -> list[asyncpg.Record]:
            text, args = sql.search(
                signature, int(vec.size), query, Vector(vec), limit, hnsw=False, half=half, nearest=nearest
            )
            async with self._conn() as conn:
                return await conn.fetch(text, *args)

        narrowed = query.session_id is not None or query.agent_id is not None or query.types is not None
        nearest = None if narrowed else limit * EXACT_NEAREST_SHARE
        rows = await fetch(nearest)
        if not sql.exact_is_complete(rows, limit, nearest):
            rows = await fetch(None)
        return _hits(rows)

    async def search_hnsw(
        self, signature: str, query: VectorQuery, vec: np.ndarray[Any, Any], limit: int, *, own_index: bool = False
    ) -> list[VectorHit]:
        """The HNSW index (the owner's own with ``own_index``) with iterative scan (relaxed order,
        re-sorted): one statement (``_hnsw_fetch``)."""
        text, args = sql.search(
            signature, int(vec.size), query, Vector(vec), limit, hnsw=True, half=_half(signature), own_index=own_index
        )
        async with self._conn() as conn:
            rows = await self._hnsw_fetch(conn, text, *args)
        return _hits(rows)

    async def neighbours(
        self,
        signature: str,
        owner: str,
        *,
        min_score: float,
        per_memory: int = 5,
        limit: int = 1000,
        since: datetime | None = None,
    ) -> list[Pair]:
        """Similar pairs of the owner's active memories (see the port).

        Small owners: their vectors are loaded and compared exactly in numpy (chunked).
        Large owners: one partitioned pass (``bulk_pairs``: k-means clusters, exact cosines
        within each), loading vectors a page or a cluster at a time by id (one ``bytea`` per
        load, decoded by numpy), so the sleep process holds the ids (packed, 16 bytes each)
        and a few thousand vectors, never the owner's all; an incremental run with few probes
        (``PROBE_SHARE_FOR_HNSW``) asks the HNSW index once per probe instead.
        """
        check_signature(signature)
        if per_memory <= 0 or limit <= 0:
            return []
        cutoff = aware(since)
        if not await self.is_large(signature, owner):
            async with self._conn() as conn:
                rows = await conn.fetch(sql.OWNER_VECTORS, owner, signature)
            if len(rows) < 2:
                return []
            ids = [str(r["memory_id"]) for r in rows]
            probe = np.array([cutoff is None or r["updated_at"] >= cutoff for r in rows], dtype=np.bool_)
            matrix = np.stack([_as_array(r["embedding"]) for r in rows])
            return await asyncio.to_thread(
                exact_pairs, ids, matrix, probe, min_score=min_score, per_memory=per_memory, limit=limit
            )
        async with self._conn() as conn:
            row = await conn.fetchrow(sql.OWNER_MEMBERS, owner, signature, cutoff)
        members = PackedIds(row["ids"] if row is not None else None)
        if len(members) < 2:
            return []
        probe = np.array(row["probe"], dtype=np.bool_)
        del row
        dim = await self._known_dim(signature) or 0
        probing = np.flatnonzero(probe)
        if dim and len(probing) <= PROBE_SHARE_FOR_HNSW * len(members):
            probes = [members[r] for r in probing.tolist()]
            return await self._probe_pairs(signature, owner, dim, probes, per_memory, min_score, limit)

        async def vectors_of(chosen: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            async with self._conn() as conn:
                row = await conn.fetchrow(sql.VECTORS_OF, signature, members.packed(chosen))
            # a memory deleted meanwhile: a zero row, which pairs with nothing
            out = np.zeros((len(chosen), dim), np.float32)
            if row is not None and row["rows"]:
                out[row["rows"]] = np.frombuffer(row["blob"], ">f4").reshape(len(row["rows"]), dim + 1)[:, 1:]
            return out

        return await bulk_pairs(
            members,
            probe,
            vectors_of,
            min_score=min_score,
            per_memory=per_memory,
            limit=limit,
            cluster_size=self.pair_cluster_size,
        )

    async def _probe_pairs(
        self, signature: str, owner: str, dim: int, probes: list[str], per_memory: int, min_score: float, limit: int
    ) -> list[Pair]:
        """Pairs of ``probes`` with their ``per_memory`` nearest, one HNSW probe each (a LATERAL
        query per chunk of probes; the owner's own index when it has one)."""
        found: dict[tuple[str, str], float] = {}
        own = (await self._route(signature, owner, dim))[1]
        text = sql.lateral_neighbours(signature, dim, _half(signature), owner if own else None)
        for start in range(0, len(probes), _PROBE_CHUNK):
            chunk = [as_uuid(i) for i in probes[start : start + _PROBE_CHUNK]]
            async with self._conn() as conn:
                rows = await self._hnsw_fetch(conn, text, chunk, owner, per_memory, min_score)
            for key, score in merge_pairs((str(r["a"]), str(r["b"]), r["score"]) for r in rows).items():
                found[key] = max(score, found.get(key, score))
        return best_pairs(found.items(), limit)

    async def status(self, signature: str) -> StoreStatus:
        """Reachable, vector count and dimension of ``signature``, and which index serves it."""
        check_signature(signature)
        try:
            async with self._conn() as conn:
                row = await conn.fetchrow(sql.STATUS, signature)
                indexes = await conn.fetch(sql.INDEXES_OF, sql.index_prefix(signature))
        except DependencyDown as exc:
            return StoreStatus(name=self.name, healthy=False, signature=signature, detail=exc.description)
        assert row is not None
        count, lo, hi = int(row["n"]), row["lo"], row["hi"]
        dim = self._dims.get(signature) or hi
        if lo is not None and (lo != hi or (dim is not None and dim != hi)):
            detail = f"mixed dimensions for this signature: {lo}..{hi} (expected {dim})"
            return StoreStatus(
                name=self.name, healthy=False, signature=signature, dim=dim, vectors=count, detail=detail
            )
        names = [r["indexname"] + ("" if r["valid"] else " (invalid)") for r in indexes]
        storage = "halfvec, 2 bytes per dimension" if _half(signature) else "vector, 4 bytes per dimension"
        index = f"hnsw: {', '.join(names)}" if names else "no hnsw index: exact search only"
        detail = f"storage: {storage}; {index}"
        return StoreStatus(name=self.name, healthy=True, signature=signature, dim=dim, vectors=count, detail=detail)

    # -- helpers ----------------------------------------------------------------------

    async def is_large(self, signature: str, owner: str) -> bool:
        """Whether the owner has more than ``exact_max_rows`` vectors (bounded count, cached 60 s)."""
        dim = await self._known_dim(signature)
        return (await self._route(signature, owner, dim or 0))[0]

    async def _route(self, signature: str, owner: str, dim: int) -> tuple[bool, bool]:
        """(more than ``exact_max_rows`` vectors, has a valid own index): one statement, cached 60 s."""
        key = (signature, owner)
        cached = self._routes.get(key)
        if cached is not None:
            return cached
        name = sql.owner_index_name(signature, owner, dim, _half(signature))
        async with self._conn() as conn:
            row = await conn.fetchrow(sql.ROUTE, signature, owner, self.exact_max_rows + 1, name)
        assert row is not None
        route = (int(row["n"]) > self.exact_max_rows, row["own"] is True)
        self._routes[key] = route
        return route

    async def _hnsw_fetch(self, conn: asyncpg.Connection, text: str, *args: Any) -> list[asyncpg.Record]:
        """Run an HNSW statement with this store's scan settings: as is on a connection opened
        with them (checked once per store: a pool's connections share their parameters), else
        with ``SET LOCAL`` in a read-only transaction."""
        if self._sessions_tuned is None:
            found = dict(await conn.fetchrow(sql.SESSION_CHECK) or {})
            self._sessions_tuned = found == sql.session_settings(self.ef_search, self.max_scan_tuples)
        if self._sessions_tuned:
            return list(await conn.fetch(text, *args))
        async with conn.transaction(readonly=True):
            await conn.execute(sql.hnsw_settings(self.ef_search, self.max_scan_tuples))
            return list(await conn.fetch(text, *args))

    async def _known_dim(self, signature: str) -> int | None:
        dim = self._dims.get(signature)
        if dim is None:
            async with self._conn() as conn:
                dim = await conn.fetchval("SELECT dim FROM memory_embeddings WHERE signature = $1 LIMIT 1", signature)
            if dim is not None:
                self._dims[signature] = int(dim)
        return dim

    def _conn(self) -> _Acquire:
        return _Acquire(self.pool)


class PackedIds:
    """An owner's memory ids as ``OWNER_MEMBERS`` packs them: 16 bytes per uuid in one array
    (1.6 MB for 100,000 memories, against ~9 MB as Python strings), named one at a time."""

    def __init__(self, packed: bytes | None) -> None:
        self._ids = np.frombuffer(packed or b"", dtype="V16")

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, row: int) -> str:
        return str(uuid.UUID(bytes=self._ids[row].tobytes()))

    def packed(self, rows: np.ndarray[Any, Any]) -> bytes:
        """The ids of ``rows``, packed in that order (what ``VECTORS_OF`` takes)."""
        return self._ids[rows].tobytes()


class _Acquire:
    """``pool.acquire()`` that turns connection failures into ``DependencyDown``."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._cm = pool.acquire()

    async def __aenter__(self) -> asyncpg.Connection:
        try:
            return await self._cm.__aenter__()
        except _CONNECTION_ERRORS as exc:
            raise DependencyDown(f"postgres unreachable: {exc or type(exc).__name__}") from exc

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._cm.__aexit__(*exc_info)
        error = exc_info[1]
        if isinstance(error, TimeoutError):
            raise DependencyDown("postgres: statement timed out") from error
        if isinstance(error, _CONNECTION_ERRORS):
            raise DependencyDown(f"postgres connection lost: {error or type(error).__name__}") from error


async def mark_embedded(
    conn: asyncpg.Connection | asyncpg.Pool,
    embedded: Sequence[tuple[str, str]],
    signature: str,
    contexts: Sequence[str | None] | None = None,
) -> int:
    """Record that these ``(memory_id, content_hash)`` were embedded under ``signature``.

    Sets ``embedding_signature`` and clears ``needs_reindex`` only where the memory's
    ``content_hash`` (and, when given, its ``context`` head, in the same order) is still the
    embedded one, so an edit made while embedding keeps its ``needs_reindex``. Returns how
    many memories were marked.
    """
    check_signature(signature)
    if not embedded:
        return 0
    ids = [as_uuid(m) for m, _h in embedded]
    hashes = [h for _m, h in embedded]
    status = await conn.execute(sql.MARK_EMBEDDED, ids, hashes, signature, None if contexts is None else list(contexts))
    return _rowcount(status)


def _half(signature: str) -> bool:
    """Whether ``signature``'s vectors are stored as ``halfvec``."""
    return vector_quantization(signature) == "half"


def _as_array(value: Any) -> np.ndarray[Any, Any]:
    """A decoded ``vector`` column (pgvector's ``Vector``, or a list) as float32 numpy."""
    if isinstance(value, Vector):
        return value.to_numpy().astype(np.float32, copy=False)
    return np.asarray(value, dtype=np.float32)


def _hits(rows: Sequence[asyncpg.Record]) -> list[VectorHit]:
    """A search statement's rows (``sql.search``: id text, score) as hits."""
    return [VectorHit(memory_id=r[0], score=r[1]) for r in rows]


def _rowcount(status: str) -> int:
    """The row count of a command tag such as ``DELETE 3`` or ``UPDATE 2``."""
    try:
        return int(status.rsplit(" ", 1)[-1])
    except (ValueError, IndexError):
        return 0
