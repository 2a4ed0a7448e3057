"""The keyword tier ranked in the retrieve process (``keywordIndex=memory``): per owner an
``OwnerIndex`` of PostgreSQL's own lexemes, kept in step through ``keyword_versions`` and
``keyword_changes`` (migration 0014), least recently searched owners evicted over a memory budget.

``KeywordIndexes.search`` reads the question's lexemes and the owner's version in one statement;
an index at that version ranks at once, one behind first re-reads the memories logged since its
version (read-your-writes for anything committed before the search began); a deletion keeps no
id in the log, so an index behind one is rebuilt. An owner not held yet (or to be rebuilt) with at
most ``inline_rows`` memories is built by the search that meets it; a larger one is built in the
background while the statement answers, as it answers questions with a phrase or a negation,
metadata filters, and any global memory of another owner (counted by reason).

A ranking served here (``HeldRanking``) also gives the search's rows (``rows``: what ``MemoryRow``
shows and every chat turn, ``logic.held_rows``) and, up to ``vector_rows_max`` memories, ranks the
owner's vectors of ``vectors_of`` (``nearest``, ``logic.held_vectors``; migration 0018 logs the embed mark).
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import numpy as np

from services.retrieve.logic import held_rows
from services.retrieve.logic.bm25 import KeywordRanking, cover_of
from services.retrieve.logic.held_rows import Turns
from services.retrieve.logic.held_vectors import HeldVectors, decode_sent
from services.retrieve.logic.keyword_index import NEVER, Doc, Hit, Matches, OwnerIndex, View, tsvector_entries
from services.retrieve.logic.lexemes import TS_CONFIG, plain_lexemes
from services.retrieve.logic.plan import MemoryRow
from shared.observability.logging import get_logger
from shared.observability.metrics import RETRIEVE_KEYWORD_TIER
from shared.vectors.pgvector import DEFAULT_EXACT_MAX_ROWS
from shared.vectors.pgvector_sql import STORED

log = get_logger(__name__)

#: versions the change log keeps at least (migration 0014): an index further behind is rebuilt
KEPT_VERSIONS = 4096
#: appended plus deleted memories, as a share of the owner's, before the index is compacted
COMPACT_SHARE = 0.05
#: seconds an owner whose index alone exceeds the budget is left to the statement before a new try
OVER_BUDGET_S = 600.0
#: an owner with at most this many visible memories is built by its first search, which waits (a
#: build costs several statement searches: above this the wait would be felt; the statement answers)
INLINE_ROWS = 250
#: an owner with at most this many memories has its vectors held too (the engine's ``vector_rows_max``);
#: above, pgvector's HNSW probe ranks them: ranking 100,000 here, even packed, fills the one retrieve
#: process's core at concurrency 16 sooner than the probe fills PostgreSQL's (docs/decisions.md)
VECTOR_ROWS_MAX = 25_000
#: up to this many, as float rows ranked exactly (1.5 kB per memory of 384 dimensions), as far as pgvector
#: too searches exactly; above, packed (``logic.packed_vectors``: 436 bytes, ranked approximately as
#: the HNSW probe is, for a fraction of the exact product's CPU)
EXACT_VECTOR_ROWS_MAX = DEFAULT_EXACT_MAX_ROWS


QUESTION_SQL = (
    f"SELECT websearch_to_tsquery('{TS_CONFIG}', $1)::text AS q,"
    f" tsvector_to_array(to_tsvector('{TS_CONFIG}', $1)) AS l,"
    " coalesce((SELECT k.version FROM keyword_versions k WHERE k.owner = $2), 0) AS v,"
    " EXISTS (SELECT 1 FROM memories g WHERE g.scope = 'global' AND g.owner <> $2) AS g,"
    " (extract(epoch FROM now()) * 1000000)::int8 AS now_us,"
    " (extract(epoch FROM now() - make_interval(days => $3)) * 1000000)::int8 AS after_us"
)
#: one statement, so one snapshot: the owner's version and the memories as of that version
_VERSION = "SELECT coalesce((SELECT k.version FROM keyword_versions k WHERE k.owner = $1), 0) AS v"
_DOC = (
    "SELECT m.id, (extract(epoch FROM m.created_at) * 1000000)::int8 AS created,"
    f" CASE WHEN m.expires_at IS NULL OR m.expires_at = 'infinity' THEN {int(NEVER)}"
    " ELSE (extract(epoch FROM m.expires_at) * 1000000)::int8 END AS expires,"
    " m.type, m.session_id, m.agent_id, m.scope = 'global' AS glob, m.tsv::text AS l,"
    " m.content, m.scope, m.metadata::text AS meta, m.source FROM memories m"
    " WHERE m.owner = $1 AND m.state = 'active' AND (m.expires_at IS NULL OR m.expires_at > now())"
)
_DOC_COLUMNS = (
    "d.id, d.created, d.expires, d.type, d.session_id, d.agent_id, d.glob, d.l, d.content, d.scope, d.meta, d.source"
)
#: every visible memory of the owner (a row with a NULL id when it has none)
DOCS_SQL = f"WITH v AS ({_VERSION}) SELECT v.v, {_DOC_COLUMNS} FROM v LEFT JOIN ({_DOC}) d ON true"
#: the same, at most $2 memories (an owner small enough to be built inline reads them all)
SOME_DOCS_SQL = f"WITH v AS ({_VERSION}) SELECT v.v, {_DOC_COLUMNS} FROM v LEFT JOIN ({_DOC} LIMIT $2) d ON true"
#: a chat turn of a session, in any state (``_rows_sql``'s turns), as ``created`` (µs) and ``m.session_id``
_TURN = (
    "(extract(epoch FROM m.created_at) * 1000000)::int8 AS created FROM memories m"
    " WHERE m.owner = $1 AND m.source = 'chat_turn' AND m.session_id IS NOT NULL"
)
#: every chat turn of the owner: sessions, ``created`` (int8) and ids (uuid) as big-endian bytes
TURNS_SQL = (
    "SELECT array_agg(t.session_id) AS s, string_agg(int8send(t.created), ''::bytea) AS c,"
    f" string_agg(uuid_send(t.id), ''::bytea) AS i FROM (SELECT m.id, m.session_id, {_TURN}) t"
)
#: the memories logged since version $2: the changed id, and its row unless it is gone or invisible,
#: and its turn (``t_session``, ``t_created``) when it is a chat turn of a session in any state;
#: ``deleted``: memories were deleted meanwhile (their ids are not kept: the index is rebuilt)
CHANGED_SQL = (
    f"WITH v AS ({_VERSION}), c AS (SELECT DISTINCT memory_id, memory_id IS NULL AS deleted FROM keyword_changes"
    "  WHERE owner = $1 AND version > $2)"
    f" SELECT v.v, c.memory_id, coalesce(c.deleted, false) AS deleted, {_DOC_COLUMNS},"
    " t.session_id AS t_session, t.created AS t_created FROM v LEFT JOIN c ON true"
    f" LEFT JOIN LATERAL ({_DOC} AND m.id = c.memory_id) d ON true"
    f" LEFT JOIN LATERAL (SELECT m.session_id, {_TURN} AND m.id = c.memory_id) t ON true"
)
_VECTORS = (
    "SELECT string_agg(uuid_send(e.memory_id), ''::bytea) AS i,"
    f" string_agg(vector_send({STORED}), ''::bytea) AS v FROM memory_embeddings e"
    " WHERE e.owner = $1 AND e.signature = $2"
)
#: the owner's vectors of signature $2: ids (``uuid_send``) and vectors (``vector_send``), each concatenated
VECTORS_SQL = _VECTORS
#: the same for the memories $3 only
SOME_VECTORS_SQL = _VECTORS + " AND e.memory_id = ANY($3::uuid[])"
#: seconds a read of vectors waits for a lock on ``memory_embeddings`` (a store held up must not hold
#: up the keyword tier): past it the vectors are not held, and the vector store ranks them
VECTOR_READ_TIMEOUT_S = 0.5
#: seconds after such a read before a search rebuilds the owner's index to hold its vectors again
VECTOR_RETRY_S = 60.0


def _seconds_since(marks: dict[str, float], owner: str) -> float:
    """Seconds since the owner's mark in ``marks`` (``time.monotonic()`` values); infinite without one."""
    mark = marks.get(owner)
    return math.inf if mark is None else time.monotonic() - mark


def doc_of(r: Sequence[Any]) -> Doc:
    """A ``Doc`` from ``_DOC_COLUMNS`` (at ``r[0]`` onwards)."""
    lexemes, counts = tsvector_entries(r[7] or "")
    return Doc(r[0], int(r[1]), lexemes, counts, int(r[2]), r[3], r[4], r[5], bool(r[6]), r[8], r[9], r[10], r[11])


def turns_of(index: OwnerIndex, row: Sequence[Any]) -> Turns:
    """The owner's ``Turns`` from ``TURNS_SQL``'s row (sessions interned by ``index``)."""
    sessions = np.array([index.code(x) for x in row[0] or ()], dtype=np.int32)
    created = np.frombuffer(row[1] or b"", dtype=">i8").astype(np.int64)
    ids = np.frombuffer(row[2] or b"", dtype=">u8").reshape(-1, 2).astype(np.uint64)
    return Turns(sessions, created, ids[:, 0], ids[:, 1])


def with_vectors(docs: list[Doc], row: Sequence[Any] | None) -> list[Doc]:
    """``docs`` with their vectors from ``VECTORS_SQL``'s row (None: none read)."""
    if row is None or not row[0]:
        return docs
    ids = row[0]
    vectors = decode_sent(row[1])
    at = {ids[16 * i : 16 * i + 16]: i for i in range(len(ids) // 16)}
    return [d if (i := at.get(d.id.bytes)) is None else d._replace(vector=vectors[i]) for d in docs]


async def _all_vectors(conn: asyncpg.Connection, owner: str, signature: str) -> asyncpg.Record | None:
    """``VECTORS_SQL``'s row in the build's snapshot; None when a lock on ``memory_embeddings`` holds
    it up past ``VECTOR_READ_TIMEOUT_S`` (the build goes on without vectors)."""
    try:
        async with conn.transaction():  # a savepoint: a lock timeout leaves the build's transaction usable
            await conn.execute(f"SET LOCAL lock_timeout = '{int(VECTOR_READ_TIMEOUT_S * 1000)}ms'")
            return await conn.fetchrow(VECTORS_SQL, owner, signature)
    except asyncpg.LockNotAvailableError as exc:
        log.warning("retrieve.held_vectors_unread", owner=owner, error=str(exc))
        return None


def _built(docs: list[Doc], turn_row: Sequence[Any], packed: bool) -> tuple[OwnerIndex, Turns]:
    index = OwnerIndex(docs, packed=packed)
    return index, turns_of(index, turn_row)


@dataclass
class _Held:
    index: OwnerIndex
    version: int
    turns: Turns | None = None
    #: the signature whose vectors the build was to hold (None: none)
    signature: str | None = None
    #: whether every vector of ``signature`` is held (the owner was under the cap; kept by catch-ups)
    holds_vectors: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    size: int = 0  # ``nbytes()`` when last measured (after the build and each catch-up)

    def nbytes(self) -> int:
        turns = 0 if self.turns is None else self.turns.nbytes()
        # the dicts, roughly
        return sum(self.index.nbytes().values()) + 100 * (len(self.index.vocab) + len(self.index.names)) + turns


@dataclass(frozen=True)
class HeldRanking(KeywordRanking):
    """A ranking the in-memory tier served for ``owner`` at ``version`` or later under ``view``:
    the search's rows can be read from the same index (``KeywordIndexes.rows``)."""

    owner: str
    version: int
    view: View
    lexemes: tuple[str, ...] = ()  # the question's, as searched (``KeywordIndexes.within`` searches them again)
    #: every match scored, kept for ``KeywordIndexes.within`` (the search's own arrays: no copy)
    matches: Matches | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Ask:
    """One keyword search as the in-memory tier takes it (``adapters.postgres.Visibility`` parts)."""

    owner: str
    query: str
    limit: int
    retention_days: int
    types: tuple[str, ...] | None = None
    session_id: str | None = None
    agent_id: str | None = None
    metadata: bool = False  # a metadata filter: left to the statement
    scoring: str = "bm25"  # ``cover_density``: left to the statement


class KeywordIndexes:
    """The owners' indexes this process holds, their background builds, and what served."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        budget_bytes: int = 256 << 20,
        builds: int = 2,
        inline_rows: int = INLINE_ROWS,
        vector_rows_max: int = VECTOR_ROWS_MAX,
        exact_vector_rows_max: int = EXACT_VECTOR_ROWS_MAX,
    ) -> None:
        self.pool = pool
        self.budget_bytes = budget_bytes
        self.inline_rows = inline_rows
        self.vector_rows_max = vector_rows_max
        self.exact_vector_rows_max = exact_vector_rows_max
        #: the signature whose vectors the indexes hold (the engine sets it: the active signature of
        #: pgvector when that store searches first; None: no vectors held)
        self.vectors_of: str | None = None
        self._held: OrderedDict[str, _Held] = OrderedDict()  # least recently searched first
        self._builds: dict[str, asyncio.Task[None]] = {}
        self._inline: set[str] = set()  # owners whose build under way is one a search waits for
        self._large: set[str] = set()  # owners found over ``inline_rows``: built in the background
        self._bytes = 0  # the held indexes' ``size``, summed
        self._too_large: dict[str, float] = {}  # owner -> when its index last exceeded the budget
        self._unread: dict[str, float] = {}  # owner -> when a read of its vectors last timed out
        self._slots = asyncio.Semaphore(builds)
        # a thread of its own: the default executor may be taken by other waits of the process
        self._builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="keyword-index")
        self.counts: Counter[str] = Counter()  # "memory" and "statement_fallback:<reason>"
        self.row_counts: Counter[str] = Counter()  # a search's rows: "held" and "read:<reason>"
        #: a search's vector tier: "held" (exact), "held:packed", "store:<reason>", and the engine's "unchecked"
        #: (pgvector's nearest checked here) and "checked_again:<reason>"
        self.vector_counts: Counter[str] = Counter()

    async def search(self, ask: Ask) -> KeywordRanking | None:
        """The ranking, or None when the statement is to answer (counted with its reason)."""
        if ask.metadata:
            return self._fallback("metadata_filter")
        if ask.scoring != "bm25":
            return self._fallback("cover_density")
        row = await self.pool.fetchrow(QUESTION_SQL, ask.query, ask.owner, ask.retention_days)
        lexemes = plain_lexemes(row["q"] or "", row["l"] or ())
        if lexemes is None:
            return self._fallback("phrase_or_negation")
        if row["g"]:
            return self._fallback("global_memories")
        held = self._held.get(ask.owner)
        if held is None:
            if _seconds_since(self._too_large, ask.owner) < OVER_BUDGET_S:
                return self._fallback("over_budget")
            held = await self._first(ask.owner)
            if held is None:
                return self._fallback("building")
        self._held.move_to_end(ask.owner)
        if self.vectors_of is not None and held.signature != self.vectors_of and self._may_read_vectors(ask.owner):
            self._build_later(ask.owner)  # the active signature changed (or a read failed): a new build
        view = View(int(row["now_us"]), int(row["after_us"]), ask.types, ask.session_id, ask.agent_id)
        async with held.lock:
            current = held.version >= row["v"] or await self._catch_up(ask.owner, held)
            if current:
                hits, occurrences, matches = held.index.search_keeping(lexemes, ask.limit, view)
            else:
                self._drop(ask.owner, held)
        if not current:  # rebuilt now, from a newer snapshot, when the owner is small
            rebuilt = await self._first(ask.owner)
            if rebuilt is None:
                return self._fallback("rebuilding")
            async with rebuilt.lock:
                hits, occurrences, matches = rebuilt.index.search_keeping(lexemes, ask.limit, view)
        self.counts["memory"] += 1
        RETRIEVE_KEYWORD_TIER.labels("memory", "").inc()
        return HeldRanking(list(hits), cover_of(occurrences), ask.owner, int(row["v"]), view, tuple(lexemes), matches)

    async def within(self, ranking: HeldRanking, ranges: Sequence[tuple[int, int]], limit: int) -> list[Hit] | None:
        """The best ``limit`` matches of ``ranking``'s question created within ``ranges`` (µs), scored
        as ``ranking`` was: from its kept matches while the index is unchanged, else scored again
        (``OwnerIndex.search_within``); None when the owner's index is gone or was rebuilt behind
        ``ranking``'s version (no window candidates then)."""
        held = self._held.get(ranking.owner)
        if held is None or held.version < ranking.version:
            return None
        async with held.lock:
            kept = None if ranking.matches is None else held.index.top_within(ranking.matches, limit, ranges)
            if kept is not None:
                return kept
            return held.index.search_within(ranking.lexemes, limit, ranking.view, ranges)

    def is_held(self, owner: str) -> bool:
        """Whether the owner's index is held now (its next search is likely served here)."""
        return owner in self._held

    def visible_among(self, ranking: HeldRanking, ids: Sequence[str]) -> list[bool] | None:
        """Whether ``ranking``'s view sees each of ``ids`` (uuid text), by the owner's index at
        ``ranking``'s version or later; None when the index is gone or behind."""
        held = self._held.get(ranking.owner)
        if held is None or held.version < ranking.version:
            return None
        ordinals = held.index.ordinals(ids)
        seen = held.index.seen_by(ranking.view)
        return ((ordinals >= 0) & seen[np.maximum(ordinals, 0)]).tolist()

    def holds_vectors(self, owner: str) -> bool:
        """Whether the owner's index holds its vectors of ``vectors_of`` now (a search may then wait
        for its keyword tier and rank them there, rather than ask the store at the same time)."""
        held = self._held.get(owner)
        return held is not None and held.holds_vectors and held.signature == self.vectors_of

    def nearest(self, ranking: HeldRanking, signature: str, vector: Any, limit: int) -> list[tuple[str, float]] | None:
        """The vector tier's ranking for ``ranking``'s search: the ``limit`` memories its view sees
        nearest to ``vector`` (of ``signature``), from the owner's held vectors at ``ranking``'s
        version or later; None (counted with its reason) when they are not held: the store ranks."""
        held = self._held.get(ranking.owner)
        if held is None or held.version < ranking.version:
            reason = "not_held"
        elif held.signature != signature:
            reason = "other_signature"
        elif not held.holds_vectors:
            reason = "over_cap"
        elif held.index.vectors is not None and held.index.vectors.dim != len(vector):
            reason = "other_dimension"
        else:
            self.vector_counts["held" if isinstance(held.index.vectors, HeldVectors) else "held:packed"] += 1
            return held.index.nearest(vector, limit, ranking.view)
        self.vector_counts[f"store:{reason}"] += 1
        return None

    def rows(self, ranking: HeldRanking, ids: Sequence[str], *, turns: bool) -> dict[str, MemoryRow] | None:
        """The rows of ``ids`` (each once) as ``fetch_rows`` reads them, from the owner's index at
        ``ranking``'s version or later; None (counted with its reason) when the index is gone or does
        not hold one of them alive and visible: the statement reads them."""
        held = self._held.get(ranking.owner)
        if held is None or held.version < ranking.version:
            self.row_counts["read:not_held"] += 1
            return None
        found = held_rows.rows(held.index, held.turns, ids, ranking.view, with_turns=turns)
        self.row_counts["held" if found is not None else "read:candidate_not_held"] += 1
        return found

    def _fallback(self, reason: str) -> KeywordRanking | None:
        self.counts[f"statement_fallback:{reason}"] += 1
        RETRIEVE_KEYWORD_TIER.labels("statement_fallback", reason).inc()
        return None

    async def _catch_up(self, owner: str, held: _Held) -> bool:
        """Apply the changes logged since ``held.version`` (False: the log no longer reaches back, or
        memories were deleted meanwhile: the index is to be rebuilt)."""
        rows = await self.pool.fetch(CHANGED_SQL, owner, held.version)
        version = rows[0]["v"]
        if version - held.version >= KEPT_VERSIONS or any(r["deleted"] for r in rows):
            return False
        changed = [r for r in rows if r["memory_id"] is not None]
        docs = [doc_of(r[3:]) for r in rows if r["id"] is not None]
        if held.holds_vectors and docs:
            docs = await self._vectors_of(owner, held, docs)
        index = held.index
        if held.turns is not None and changed:
            ints = [r["memory_id"].int for r in changed]
            held.turns.replace(
                np.array([i >> 64 for i in ints], dtype=np.uint64),
                np.array([i & 0xFFFFFFFFFFFFFFFF for i in ints], dtype=np.uint64),
                np.array([index.code(r["t_session"]) if r["t_session"] is not None else 0 for r in changed], np.int32),
                np.array([r["t_created"] or 0 for r in changed], dtype=np.int64),
                np.array([r["t_session"] is not None for r in changed], dtype=np.bool_),
            )
        for r in changed:
            index.delete(r["memory_id"])
        for doc in docs:
            index.append(doc)
        if index.dirty() > max(64, COMPACT_SHARE * index.size):
            index.compact()
        if held.holds_vectors and index.size - index.dead > self.vector_rows_max:
            index.drop_vectors()  # outgrown: the vector store ranks this owner's vectors
            held.holds_vectors = False
        elif held.holds_vectors and index.size - index.dead > self.exact_vector_rows_max:
            index.pack_vectors()  # outgrown exact ranking (nothing when packed already)
        held.version = version
        if self._held.get(owner) is held:  # not evicted meanwhile
            size, held.size = held.size, held.nbytes()
            self._bytes += held.size - size
        return True

    async def _vectors_of(self, owner: str, held: _Held, docs: list[Doc]) -> list[Doc]:
        """``docs`` with their vectors of ``held.signature``; when the read waits past
        ``VECTOR_READ_TIMEOUT_S`` the index stops holding vectors (a later search rebuilds it)."""
        try:
            async with asyncio.timeout(VECTOR_READ_TIMEOUT_S):
                row = await self.pool.fetchrow(SOME_VECTORS_SQL, owner, held.signature, [d.id for d in docs])
        except (TimeoutError, asyncpg.PostgresError) as exc:
            log.warning("retrieve.held_vectors_unread", owner=owner, error=str(exc) or type(exc).__name__)
            self._unread[owner] = time.monotonic()
            held.index.drop_vectors()
            held.holds_vectors, held.signature = False, None
            return docs
        return with_vectors(docs, row)

    def _may_read_vectors(self, owner: str) -> bool:
        return _seconds_since(self._unread, owner) >= VECTOR_RETRY_S

    def _drop(self, owner: str, held: _Held) -> None:
        if self._held.get(owner) is held:
            del self._held[owner]
            self._bytes -= held.size

    async def _first(self, owner: str) -> _Held | None:
        """The owner's index built now when it is small (searches of it meanwhile wait for the same
        build); None when it is built in the background."""
        if owner not in self._builds:
            if owner in self._large:
                self._build_later(owner)
                return None
            self._inline.add(owner)
            self._build_later(owner, inline=True)
        if owner not in self._inline:
            return None
        await asyncio.shield(self._builds[owner])
        return self._held.get(owner)

    def _build_later(self, owner: str, *, inline: bool = False) -> None:
        if owner not in self._builds:
            self._builds[owner] = asyncio.create_task(self._build(owner, inline), name=f"keyword-index-{owner}")

    async def _build(self, owner: str, inline: bool = False) -> None:
        larger = False
        try:
            if inline:  # no slot: a small build does not queue behind a large one
                found = await self.build(owner, self.inline_rows)
            else:
                async with self._slots:
                    found = await self.build(owner)
            if found is None:
                larger = True
                self._large.add(owner)
                return
            held = found
            held.size = held.nbytes()
            if held.size > self.budget_bytes:
                log.warning("retrieve.keyword_index_over_budget", owner=owner, bytes=held.size)
                self._too_large[owner] = time.monotonic()
                return
            self._too_large.pop(owner, None)
            if (stale := self._held.get(owner)) is not None:
                self._drop(owner, stale)
            self._held[owner] = held
            self._bytes += held.size
            self._evict()
        except Exception as exc:  # the statement keeps answering; the next search tries again
            log.warning("retrieve.keyword_index_build_failed", owner=owner, error=str(exc))
        finally:
            self._builds.pop(owner, None)
            self._inline.discard(owner)
            if larger:
                self._build_later(owner)

    async def build(self, owner: str, most: int | None = None) -> _Held | None:
        """The owner's index read from PostgreSQL at one version (one snapshot); None when ``most``
        is given and the owner has more visible memories (then built here, in the event loop: a
        small index builds in about the time of a thread hand-off)."""
        signature = self.vectors_of
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            if most is None:
                rows = await conn.fetch(DOCS_SQL, owner)
            else:
                rows = await conn.fetch(SOME_DOCS_SQL, owner, most + 1)
                if len(rows) > most:
                    return None
            turn_row = await conn.fetchrow(TURNS_SQL, owner)
            vector_row = None
            if signature and len(rows) <= self.vector_rows_max:
                vector_row = await _all_vectors(conn, owner, signature)
                if vector_row is None:  # a search tries again after ``VECTOR_RETRY_S``
                    signature, self._unread[owner] = None, time.monotonic()
        version = rows[0]["v"]
        docs = with_vectors([doc_of(r[1:]) for r in rows if r["id"] is not None], vector_row)
        holds = vector_row is not None
        del rows, vector_row
        packed = len(docs) > self.exact_vector_rows_max
        if most is not None:
            index, turns = _built(docs, turn_row, packed)
            return _Held(index, version, turns, signature, holds)
        index, turns = await asyncio.get_running_loop().run_in_executor(self._builder, _built, docs, turn_row, packed)
        return _Held(index, version, turns, signature, holds)

    def _evict(self) -> None:
        while self._bytes > self.budget_bytes and len(self._held) > 1:
            _, gone = self._held.popitem(last=False)
            self._bytes -= gone.size

    async def settle(self) -> None:
        """Wait for the builds under way (tests, shutdown)."""
        while self._builds:
            await asyncio.gather(*list(self._builds.values()), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._builds.values()):
            task.cancel()
        await asyncio.gather(*list(self._builds.values()), return_exceptions=True)
        self._held.clear()
        self._bytes = 0
        self._builder.shutdown(wait=False, cancel_futures=True)

    def status(self) -> str:
        """One line for ``engine.status``: what is held and who answered the searches."""
        size = self._bytes / 1e6
        served = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "no searches yet"
        rows = ", ".join(f"{k} {v}" for k, v in sorted(self.row_counts.items()))
        served += f"; rows {rows}" if rows else ""
        vectors = ", ".join(f"{k} {v}" for k, v in sorted(self.vector_counts.items()))
        served += f"; vectors {vectors}" if vectors else ""
        return f"in-memory index: {len(self._held)} owners held ({size:.1f} MB), {len(self._builds)} building; {served}"

    def held_ids(self, owner: str) -> set[uuid.UUID] | None:
        """The ids the owner's index holds alive (None: not held); for tests and diagnostics."""
        held = self._held.get(owner)
        if held is None:
            return None
        ix = held.index
        return {uuid.UUID(int=(int(ix.hi[i]) << 64) | int(ix.lo[i])) for i in range(ix.size) if ix.alive[i]}
