"""SQL text for the pgvector adapter, built per signature and dimension.

A signature's vectors live in one of two columns of ``memory_embeddings``: ``embedding``
(``vector``, full precision) or ``embedding_half`` (``halfvec``, for a ``...:half`` signature);
``column`` and ``stored`` name the one a statement reads.

The partial HNSW index of a signature only serves a query whose WHERE names the same
signature as a constant and whose ORDER BY repeats the index's cast expression, so these
builders inline the signature (escaped by ``common.sql_literal``) and the dimension (an
int). Optional filters produce distinct statements rather than ``$n IS NULL OR ...``
clauses, so every prepared plan fits its query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .common import aware, signature_hash, sql_literal
from .port import VectorQuery

HNSW_MAX_DIM = {False: 2000, True: 4000}  # vector / halfvec


def hnsw_max_dim(half: bool) -> int:
    return HNSW_MAX_DIM[half]


def literal(signature: str) -> str:
    return sql_literal(signature)


def index_prefix(signature: str) -> str:
    return f"memory_embeddings_hnsw_{signature_hash(signature)}_"


def index_name(signature: str, dim: int, half: bool) -> str:
    return f"{index_prefix(signature)}{'h' if half else 'v'}{int(dim)}"


def _owner_digest(owner: str) -> str:
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:12]


def owner_index_name(signature: str, owner: str, dim: int, half: bool) -> str:
    """The name of one owner's own partial HNSW index (under the signature's prefix, so
    ``drop`` removes it with the signature's)."""
    return f"{index_prefix(signature)}o{_owner_digest(owner)}_{'h' if half else 'v'}{int(dim)}"


def owner_index_pattern(owner: str) -> str:
    """A ``LIKE`` pattern matching the owner's own indexes of every signature (``OWNER_INDEXES``)."""
    return f"memory\\_embeddings\\_hnsw\\_%\\_o{_owner_digest(owner)}\\_%"


def lock_key(signature: str, owner: str | None = None) -> int:
    """A signed 64-bit advisory-lock key for building this signature's (or one owner's) index."""
    name = signature if owner is None else f"{signature}\x00{owner}"
    digest = hashlib.sha256(b"memoryd-hnsw:" + name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _type(half: bool) -> str:
    return "halfvec" if half else "vector"


def column(half: bool) -> str:
    """The column holding a signature's vectors."""
    return "embedding_half" if half else "embedding"


#: A row's vector in full precision, whichever column holds it (for reads that decode vectors).
STORED = "coalesce(e.embedding, e.embedding_half::vector)"


def vec_expr(alias: str, dim: int, half: bool) -> str:
    """The indexed expression: the untyped column cast to this signature's dimension."""
    return f"({alias}.{column(half)}::{_type(half)}({int(dim)}))"


def query_expr(dim: int, half: bool) -> str:
    """Parameter ``$1`` cast so it compares with ``vec_expr``."""
    return f"$1::vector({int(dim)})::halfvec({int(dim)})" if half else f"$1::vector({int(dim)})"


def query_any(half: bool) -> str:
    """Parameter ``$1`` cast to compare with the untyped column (exact distances)."""
    return "$1::vector::halfvec" if half else "$1::vector"


def create_index(signature: str, dim: int, half: bool) -> str:
    t = _type(half)
    return (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{index_name(signature, dim, half)}" ON memory_embeddings'
        f" USING hnsw (({column(half)}::{t}({int(dim)})) {t}_cosine_ops) WHERE signature = {literal(signature)}"
    )


def create_owner_index(signature: str, owner: str, dim: int, half: bool) -> str:
    """One owner's partial HNSW index: its graph holds only that owner's rows."""
    t = _type(half)
    return (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{owner_index_name(signature, owner, dim, half)}"'
        f" ON memory_embeddings USING hnsw (({column(half)}::{t}({int(dim)})) {t}_cosine_ops)"
        f" WHERE signature = {literal(signature)} AND owner = {literal(owner)}"
    )


DEFAULT_EF_SEARCH = 100
DEFAULT_MAX_SCAN_TUPLES = 20_000


def _ef(ef_search: int) -> int:
    return max(1, min(int(ef_search), 1000))


def session_settings(
    ef_search: int = DEFAULT_EF_SEARCH, max_scan_tuples: int = DEFAULT_MAX_SCAN_TUPLES
) -> dict[str, str]:
    """HNSW executor settings as connection parameters (``db.pool.create_pool`` sends them at
    connect, so they survive the pool's ``RESET ALL``): a search on such a connection is one
    statement instead of BEGIN / SET LOCAL / query / COMMIT, four round trips."""
    return {
        "hnsw.ef_search": str(_ef(ef_search)),
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.max_scan_tuples": str(max(1, int(max_scan_tuples))),
    }


#: The current values of those settings, one column named after each.
SESSION_CHECK = "SELECT " + ", ".join(f"current_setting('{k}', true) AS \"{k}\"" for k in session_settings())


def hnsw_settings(ef_search: int, max_scan_tuples: int) -> str:
    """The same settings for this transaction only (HNSW reads them at scan time)."""
    return "; ".join(f"SET LOCAL {k} = {v}" for k, v in session_settings(ef_search, max_scan_tuples).items())


INDEX_VALID = (
    "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
    " WHERE c.relname = $1 AND i.indrelid = 'memory_embeddings'::regclass"
)
INDEXES_OF = (
    "SELECT c.relname AS indexname, i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
    " WHERE starts_with(c.relname, $1) AND i.indrelid = 'memory_embeddings'::regclass ORDER BY 1"
)
#: The indexes whose name matches ``$1`` (``owner_index_pattern``).
OWNER_INDEXES = (
    "SELECT c.relname AS indexname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
    " WHERE i.indrelid = 'memory_embeddings'::regclass AND c.relname LIKE $1 ORDER BY 1"
)
#: The owner's memories (any state), counted up to ``$2``: never fewer than its vectors of any signature.
OWNER_MEMORIES = "SELECT count(*) FROM (SELECT 1 FROM memories WHERE owner = $1 LIMIT $2) s"
BOUNDED_COUNT = "SELECT count(*) FROM (SELECT 1 FROM memory_embeddings WHERE signature = $1 AND owner = $2 LIMIT $3) s"
#: The owner's bounded row count and whether its own index (``$4``, by name) is valid: one round trip.
ROUTE = f"""
SELECT ({BOUNDED_COUNT}) AS n, (
    SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
    WHERE c.relname = $4 AND i.indrelid = 'memory_embeddings'::regclass
) AS own
"""
#: Rows of the signature (``$1``) and of its owner ``$2``, for the owner's share of the shared index.
SHARE = (
    "SELECT count(*) AS total, count(*) FILTER (WHERE owner = $2) AS mine FROM memory_embeddings WHERE signature = $1"
)
STATUS = "SELECT count(*) AS n, min(dim) AS lo, max(dim) AS hi FROM memory_embeddings WHERE signature = $1"
DELETE = "DELETE FROM memory_embeddings WHERE owner = $1 AND memory_id = ANY($2::uuid[])"
MARK_EMBEDDED = """
UPDATE memories m SET embedding_signature = $3, needs_reindex = false
FROM unnest($1::uuid[], $2::text[], $4::text[]) AS u(id, hash, context)
WHERE m.id = u.id AND m.content_hash = u.hash AND ($4::text[] IS NULL OR m.context IS NOT DISTINCT FROM u.context)
"""
_ALIVE = "m.state = 'active' AND (m.expires_at IS NULL OR m.expires_at > now())"
#: The sleep pool: alive and the owner's own (imported memories are never consolidated).
_POOLED = f"{_ALIVE} AND m.source <> 'import'"
OWNER_VECTORS = f"""
SELECT e.memory_id, {STORED} AS embedding, m.updated_at
FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id
WHERE e.signature = $2 AND e.owner = $1 AND m.owner = $1 AND {_POOLED}
ORDER BY e.memory_id
"""
#: The large owner's pooled memories without their vectors (``bulk_pairs`` loads those by id),
#: in one row: the ids packed in one ``bytea`` (16 bytes each, ``uuid_send``, in uuid order) and
#: whether each was updated at or after ``$3`` (all true when ``$3`` is null): no record and no
#: string per memory.
OWNER_MEMBERS = f"""
SELECT string_agg(uuid_send(e.memory_id), ''::bytea ORDER BY e.memory_id) AS ids,
       array_agg($3::timestamptz IS NULL OR m.updated_at >= $3 ORDER BY e.memory_id) AS probe
FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id
WHERE e.signature = $2 AND e.owner = $1 AND m.owner = $1 AND {_POOLED}
"""
#: The vectors of the ids packed in ``$2`` (16 bytes each, as ``OWNER_MEMBERS`` gives them), as
#: one ``bytea`` of their binary forms (``vector_send``: a 4-byte header, then big-endian float4s)
#: in the order asked, with the 0-based positions found (a deleted memory has none): one row to
#: decode with numpy, not a record per vector.
VECTORS_OF = f"""
SELECT array_agg(u.ord ORDER BY u.ord) AS rows,
       string_agg(vector_send({STORED}), ''::bytea ORDER BY u.ord) AS blob
FROM (SELECT g AS ord, encode(substring($2::bytea FROM g * 16 + 1 FOR 16), 'hex')::uuid AS id
      FROM generate_series(0, length($2::bytea) / 16 - 1) AS g) AS u
JOIN memory_embeddings e ON e.memory_id = u.id AND e.signature = $1
"""


@lru_cache(maxsize=2)
def upsert(half: bool) -> str:
    """Write vectors only for memories that exist and belong to the item's owner (sent as
    ``vector``, stored in the signature's column)."""
    col, value = column(half), "u.v::halfvec" if half else "u.v"
    return f"""
INSERT INTO memory_embeddings (memory_id, signature, owner, dim, {col})
SELECT u.id, $5, m.owner, $4, {value}
FROM unnest($1::uuid[], $2::text[], $3::vector[]) AS u(id, owner, v)
JOIN memories m ON m.id = u.id AND m.owner = u.owner
ON CONFLICT (memory_id, signature) DO UPDATE
SET {col} = EXCLUDED.{col}, dim = EXCLUDED.dim, owner = EXCLUDED.owner, created_at = now()
RETURNING memory_id
"""


@lru_cache(maxsize=256)
def lateral_neighbours(signature: str, dim: int, half: bool, own_owner: str | None = None) -> str:
    """Per probe (``$1`` ids), its ``$3`` nearest of owner ``$2`` via the HNSW index, cosine >= ``$4``
    (``own_owner``: that owner, as a literal, so its own partial index serves the probes)."""
    sig, e, p = literal(signature), vec_expr("e", dim, half), vec_expr("p", dim, half)
    owner = "$2" if own_owner is None else literal(own_owner)
    member = f"(SELECT {_POOLED} FROM memories m WHERE m.id = e.memory_id AND m.owner = $2)"
    return f"""
SELECT p.memory_id AS a, n.memory_id AS b, 1 - n.d AS score
FROM memory_embeddings p
CROSS JOIN LATERAL (
    SELECT e.memory_id, {e} <=> {p} AS d
    FROM memory_embeddings e
    WHERE e.signature = {sig} AND e.dim = {int(dim)} AND e.owner = {owner} AND e.memory_id <> p.memory_id
      AND {member}
    ORDER BY {e} <=> {p}
    LIMIT $3
) n
WHERE p.signature = {sig} AND p.dim = {int(dim)} AND p.memory_id = ANY($1::uuid[]) AND 1 - n.d >= $4
"""


def search(
    signature: str,
    dim: int,
    query: VectorQuery,
    qvec: Any,
    limit: int,
    *,
    hnsw: bool,
    half: bool,
    own_index: bool = False,
    nearest: int | None = None,
) -> tuple[str, list[Any]]:
    """The search statement and its arguments (``$1`` the query vector, ``$2`` the owner); its rows
    are ``(memory_id as text, score)``, read by position (a uuid decodes to an object first).

    ``own_index`` (HNSW only): the owner has its own partial index; the owner is then written
    as a literal too, so the planner can prove that index's predicate (a ``$2`` cannot).
    ``nearest`` (exact only): check visibility on the owner's that many nearest vectors only
    (None: on all of them); the rows say how many were read (``fetched``) and passed
    (``visible``), so the caller knows whether the answer is complete (``exact_is_complete``)."""
    args: list[Any] = [qvec, query.owner]

    def param(value: Any, cast: str) -> str:
        args.append(value)
        return f"${len(args)}::{cast}"

    alive = ["m.state = 'active'"]
    now = "now()" if query.now is None else param(aware(query.now), "timestamptz")
    alive.append(f"(m.expires_at IS NULL OR m.expires_at > {now})")
    if query.created_after is not None:
        alive.append(f"m.created_at > {param(aware(query.created_after), 'timestamptz')}")
    if query.types is not None:
        alive.append(f"m.type = ANY({param(list(query.types), 'text[]')})")
    narrow = tuple(
        (name, param(value, "text"))
        for name, value in (("session_id", query.session_id), ("agent_id", query.agent_id))
        if value is not None
    )
    k = param(limit, "int")
    owner = query.owner if hnsw and own_index else None
    where = " AND ".join(alive)
    if not hnsw:
        near = param(nearest, "int")  # LIMIT NULL: every vector of the owner
        return _exact_text(signature, int(dim), half, where, narrow, query.include_global, k, near), args
    return _search_text(signature, int(dim), half, where, narrow, query.include_global, k, owner), args


@lru_cache(maxsize=512)
def nearest_unchecked(signature: str, dim: int, half: bool, hnsw: bool, own_owner: str | None = None) -> str:
    """The owner's (``$2``) ``$3`` nearest vectors to ``$1``, visible or not, without other owners'
    global memories: ``(memory_id as text, score)`` best first. For a caller that checks visibility
    itself (the retrieve service's in-memory index): no per-row probe of ``memories``, the cost of
    the checked statement (``search``) that grows with its candidates. ``hnsw``: by the index (the
    owner's own, written as a literal, with ``own_owner``), else by exact distance, ties by id."""
    sig = literal(signature)
    # the literal too, with an index of its own, so the planner can prove that index's predicate
    owner = "e.owner = $2" + ("" if own_owner is None else f" AND e.owner = {literal(own_owner)}")
    where = f"e.signature = {sig} AND e.dim = {int(dim)} AND {owner}"
    if hnsw:  # the index's order, then re-sorted with ties by id, as the checked statement does
        d = f"{vec_expr('e', dim, half)} <=> {query_expr(dim, half)}"
        return (
            f"SELECT n.memory_id::text, 1 - n.d AS score FROM (SELECT e.memory_id, {d} AS d"
            f" FROM memory_embeddings e WHERE {where} ORDER BY {d} LIMIT $3) n ORDER BY n.d, n.memory_id"
        )
    d = f"e.{column(half)} <=> {query_any(half)}"
    return (
        f"SELECT e.memory_id::text, 1 - ({d}) AS score FROM memory_embeddings e"
        f" WHERE {where} ORDER BY {d}, e.memory_id LIMIT $3"
    )


def exact_is_complete(rows: Sequence[Any], limit: int, nearest: int | None) -> bool:
    """Whether an exact search over the owner's ``nearest`` vectors answers as one over all of
    them: it read fewer than ``nearest`` (that was all of them) or found ``limit`` visible ones
    among them (any other vector of the owner is farther than each of those)."""
    if nearest is None:
        return True
    if not rows:
        return False  # nothing visible among them (or the owner has no vector): ask all
    fetched, visible = rows[0]["fetched"], rows[0]["visible"]
    return bool(fetched < nearest or visible >= limit)


#: The owner's memories narrowed to a session or agent: ``(column, parameter)`` pairs, each an equality.
Narrow = tuple[tuple[str, str], ...]


def _member(alias: str, alive: str, narrow: Narrow) -> str:
    """Whether the owner's memory ``alias``.memory_id is visible: a correlated scalar subquery,
    so it can only run as a primary-key probe per row (never a join the planner might order
    badly on missing or stale statistics: before an ANALYZE, a join of an owner's 2,273 vectors
    with its memories ran as a nested loop re-reading the owner's rows per vector, 630 ms)."""
    return (
        f"(SELECT {alive}{''.join(f' AND m.{name} = {value}' for name, value in narrow)} FROM memories m"
        f" WHERE m.id = {alias}.memory_id AND m.owner = $2)"
    )


def _global_from(sig: str, dim: int, alive: str, narrow: Narrow) -> str:
    not_own = (
        "(" + " OR ".join(["m.owner <> $2", *(f"m.{name} IS DISTINCT FROM {value}" for name, value in narrow)]) + ")"
    )
    return (
        f"FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id AND e.signature = {sig} AND e.dim = {dim}"
        f" WHERE m.scope = 'global' AND {not_own} AND {alive}"
    )


@lru_cache(maxsize=512)
def _exact_text(
    signature: str, dim: int, half: bool, alive: str, narrow: Narrow, include_global: bool, k: str, near: str
) -> str:
    """Exact distances: the owner's ``near`` nearest vectors (found by the (signature, owner)
    btree, top-n by heapsort; the uncast ``embedding <=> $1`` matches no HNSW index), then
    visibility on each of those (``_member``), the visible global rows beside them, top ``k``."""
    sig, d = literal(signature), f"e.{column(half)} <=> {query_any(half)}"
    glob = f" UNION ALL SELECT e.memory_id, {d} AS d {_global_from(sig, dim, alive, narrow)}" if include_global else ""
    return f"""
WITH near AS MATERIALIZED (
    SELECT e.memory_id, {d} AS d FROM memory_embeddings e
    WHERE e.signature = {sig} AND e.dim = {dim} AND e.owner = $2 ORDER BY d LIMIT {near}
), own AS MATERIALIZED (SELECT n.memory_id, n.d FROM near n WHERE {_member("n", alive, narrow)})
SELECT s.memory_id::text, 1 - s.d AS score,
    (SELECT count(*) FROM near) AS fetched, (SELECT count(*) FROM own) AS visible
FROM (SELECT memory_id, d FROM own{glob}) s ORDER BY s.d, s.memory_id LIMIT {k}
"""


@lru_cache(maxsize=512)
def _search_text(
    signature: str,
    dim: int,
    half: bool,
    alive: str,
    narrow: Narrow,
    include_global: bool,
    k: str,
    own_owner: str | None = None,
) -> str:
    """HNSW: visibility per index row (``_member``); the index scan keeps going (iterative
    scan) until k rows pass."""
    sig = literal(signature)
    expr, q = vec_expr("e", dim, half), query_expr(dim, half)
    member = _member("e", alive, narrow)
    glob_from = _global_from(sig, dim, alive, narrow)
    glob = (
        f", glob AS MATERIALIZED (SELECT e.memory_id, e.{column(half)} <=> {query_any(half)} AS d {glob_from}"
        f" ORDER BY d LIMIT {k})"
        if include_global
        else ""
    )
    union = " UNION ALL SELECT memory_id, d FROM glob" if include_global else ""
    owner = "$2" if own_owner is None else literal(own_owner)
    return f"""
WITH near AS MATERIALIZED (
    SELECT e.memory_id, {expr} <=> {q} AS d
    FROM memory_embeddings e
    WHERE e.signature = {sig} AND e.dim = {dim} AND e.owner = {owner} AND {member}
    ORDER BY {expr} <=> {q} LIMIT {k}
){glob}
SELECT s.memory_id::text, 1 - s.d AS score FROM (SELECT memory_id, d FROM near{union}) s
ORDER BY s.d, s.memory_id LIMIT {k}
"""
