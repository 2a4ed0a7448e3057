"""Search adapters of the retrieve service: full-text (tier 0), newest-first, the winners' rows,
vector search through the store port (tiers 1 and 2), the query embedding over the embed RPC,
and the active signature per vector store.

Every query applies the same visibility rule as the vector-store port: the owner's rows
(of the session, when one is given) or ``scope='global'`` rows of any owner; ``active``
only, not expired, created within the retention, of the requested types. The SQL text is
built from a fixed set of clauses (never from input) so asyncpg caches one prepared
statement per shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
from nats.aio.client import Client
from numpy.typing import NDArray

from memoryd.rpc import call
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from services.retrieve.adapters.keyword_memory import Ask, KeywordIndexes
from services.retrieve.logic import bm25 as bm25_logic
from services.retrieve.logic.bm25 import (
    NO_MATCH,
    KeywordRanking,
    KeywordScoring,
    cover_of,
    estimated_frequencies,
)
from services.retrieve.logic.fusion import MAX_DISTANCE, RankedList
from services.retrieve.logic.lexemes import (
    EMPTY_STATS,
    SQL_ANY_WORD,
    TS_CONFIG,
    WIDEN_BELOW,
    MatchPlan,
    TermStats,
    keyword_plan,
    never_pruned,
    unquoted_lexemes,
    widen_again,
)
from services.retrieve.logic.plan import MemoryRow
from shared.metadata_filter import Filter, to_sql
from shared.vectors.port import VectorQuery, VectorStore

KEYWORD_TIER_DESCRIPTION = (
    f"postgres full-text: websearch_to_tsquery('{TS_CONFIG}') over memories.tsv (GIN), ranked by BM25"
    " (keywordRanking=cover_density: ts_rank_cd)"
)


@dataclass(frozen=True)
class Visibility:
    """Which memories a request may see."""

    owner: str
    session_id: str | None
    types: tuple[str, ...] | None
    retention_days: int
    metadata: Filter | None = None  # conditions on ``metadata`` (shared/metadata_filter.py)
    agent_id: str | None = None  # the agent's memories only (with the visible global ones)

    def created_after(self, now: datetime | None = None) -> datetime:
        return (now or datetime.now(UTC)) - timedelta(days=self.retention_days)


class _Clauses:
    """The visibility rule as SQL over alias ``m``, parameters numbered after the query's own.

    ``own``: the owner's rows (of the session and agent, when given); ``shared``: global rows not already in ``own``
    (a branch each, so each can use its index and stop early); ``common``: state, expiry,
    retention and types, for both.
    """

    def __init__(self, vis: Visibility, first: int) -> None:
        self.args: list[object] = []
        self.owner = owner = self._param(vis.owner, first)
        self.own = f"m.owner = {owner}"
        self.shared = f"m.scope = 'global' AND (m.owner <> {owner}"
        if vis.session_id is not None:
            session = self._param(vis.session_id, first)
            self.own += f" AND m.session_id = {session}"
            self.shared += f" OR m.session_id IS DISTINCT FROM {session}"
        if vis.agent_id is not None:
            agent = self._param(vis.agent_id, first)
            self.own += f" AND m.agent_id = {agent}"
            self.shared += f" OR m.agent_id IS DISTINCT FROM {agent}"
        self.shared += ")"
        days = self._param(vis.retention_days, first)
        self.common = (
            "m.state = 'active' AND (m.expires_at IS NULL OR m.expires_at > now())"
            f" AND m.created_at > now() - make_interval(days => {days})"
        )
        if vis.types:
            self.common += f" AND m.type = ANY({self._param(list(vis.types), first)}::text[])"
        if vis.metadata is not None:
            self.common += " AND " + to_sql(vis.metadata, "m.metadata", lambda v: self._param(v, first))

    def _param(self, value: object, first: int) -> str:
        self.args.append(value)
        return f"${first + len(self.args) - 1}"


async def keyword_search(
    pool: asyncpg.Pool,
    vis: Visibility,
    query: str,
    limit: int,
    max_candidates: int | None = None,
    *,
    stats: TermStats = EMPTY_STATS,
    match_budget: int = 0,
    scoring: KeywordScoring = "bm25",
    widen_below: int = WIDEN_BELOW,
    memory: KeywordIndexes | None = None,
) -> KeywordRanking:
    """Tier 0: ``(memory_id, score)`` best first, ties newest first, with the cover the
    coverage weighting reads (``bm25.KeywordRanking``).

    The question becomes a match and a rank query (``lexeme_logic.keyword_plan``: any of its
    words, as BM25 treats a query; measured on LoCoMo through the service, ANDing every word
    gave keyword-only R@10 0.129). ``scoring``: ``bm25`` (``logic.bm25``) or ``cover_density``
    (``ts_rank_cd``). For an owner that is never pruned (``never_pruned``: every owner within
    the budget) that happens inside the one search statement (``_unpruned``); a larger owner's
    plan needs the ``websearch_to_tsquery`` text first, one more round trip (``_pruned``).
    ``max_candidates``: rank only the newest that many matches per candidate set (None: all),
    since ranking costs a tsvector read per row. ``match_budget`` (0 = off): an owner expected
    to match more rows than this matches on all its words or its rare ones only (``stats`` from
    ``term_stats``), widened step by step while it finds fewer than ``widen_below`` (0 = never;
    ``lexeme_logic.widen_again``). ``memory`` (``keywordIndex=memory``): the in-process index ranks
    (exactly: no cap, no pruning) unless it leaves the question to this statement
    (``keyword_memory.KeywordIndexes.search``).
    """
    if memory is not None:
        ask = Ask(
            vis.owner, query, limit, vis.retention_days, vis.types, vis.session_id, vis.agent_id,
            metadata=vis.metadata is not None, scoring=scoring,
        )  # fmt: skip
        if (ranking := await memory.search(ask)) is not None:
            return ranking
    if never_pruned(stats, vis.owner, match_budget):
        statement = _unpruned(vis, query, limit, max_candidates, owner_scan=match_budget > 0)
        return await _ranked(pool, statement, scoring)
    text = await pool.fetchval(f"SELECT websearch_to_tsquery('{TS_CONFIG}', $1)::text", query) or ""
    step = 0
    while True:
        plan = keyword_plan(text, stats, vis.owner, match_budget, step)
        if plan is None:
            return NO_MATCH
        ranking = await _ranked(pool, _pruned(vis, text, plan, limit, max_candidates, stats, scoring), scoring)
        if not widen_again(plan, len(ranking.ranked), min(limit, widen_below), step):
            return ranking
        step += 1


async def _ranked(pool: asyncpg.Pool, statement: _KeywordStatement, scoring: KeywordScoring) -> KeywordRanking:
    """The keyword tier's answer to one search statement."""
    if scoring == "bm25":
        rows = await pool.fetch(_bm25_sql(statement), *statement.args)
        cover = cover_of(rows[0]["occurrences"]) if rows else 0.0
        return KeywordRanking([(str(r["id"]), float(r["score"])) for r in rows], cover)
    rows = await pool.fetch(_cover_density_sql(statement), *statement.args)
    return KeywordRanking.by_cover_density([(str(r["id"]), float(r["score"])) for r in rows])


@dataclass(frozen=True)
class _Counts:
    """Where BM25's inputs come from in SQL: the question's ``lexemes`` (text[]), the owner's
    number of ``documents``, and optional per-lexeme frequency floors (``floors``: float8[], the
    estimated frequency of each of ``lexemes``, in the same order)."""

    lexemes: str
    documents: str
    floors: str | None = None


@dataclass(frozen=True)
class _KeywordStatement:
    """What one keyword search statement is built from: ``head`` (a ``WITH`` clause that makes the
    tsquery inside the statement, or empty), the visibility ``c``, the ``matches`` (one candidate
    set per tsquery expression), the ``rank`` query of ``ts_rank_cd`` and BM25's ``counts`` (None
    where the statement is built for the other scoring), and the ``args`` (``$1`` the match, ``$2``
    the limit, ``$3`` candidates per set)."""

    head: str
    c: _Clauses
    matches: list[str]
    rank: str | None
    counts: _Counts | None
    args: list[object]
    owner_scan: bool = False


def _unpruned(
    vis: Visibility, query: str, limit: int, max_candidates: int | None, *, owner_scan: bool = False
) -> _KeywordStatement:
    """An owner within the match budget: the any-word query, its lexemes and the owner's number
    of memories are all computed in the statement from the question (``$1``).

    ``owner_scan``: the statistics put the owner within the budget, so its matches are found
    by testing each of its rows (``_candidates``), not through the GIN index."""
    c = _Clauses(vis, 4)
    question = f"(SELECT websearch_to_tsquery('{TS_CONFIG}', $1)::text AS t) w"
    query_expr = "(SELECT q FROM q)"
    return _KeywordStatement(
        head=f"WITH q AS MATERIALIZED (SELECT (SELECT {SQL_ANY_WORD}::tsquery FROM {question}) AS q)",
        c=c,
        matches=[query_expr],
        rank=query_expr,
        counts=_Counts(
            lexemes=f"tsvector_to_array(to_tsvector('{TS_CONFIG}', $1))",
            documents=f"(SELECT count(*) FROM memories m WHERE {c.own} AND {c.common})",
        ),
        args=[query, limit, max_candidates, *c.args],
        owner_scan=owner_scan,
    )


def _pruned(
    vis: Visibility,
    text: str,
    plan: MatchPlan,
    limit: int,
    max_candidates: int | None,
    stats: TermStats,
    scoring: KeywordScoring,
) -> _KeywordStatement:
    """A larger owner: ``plan`` (``keyword_plan`` of the question's tsquery ``text``). BM25 gets
    the lexemes, their estimated frequencies and ``N`` as ``$4``-``$6``; ``ts_rank_cd`` the rank
    query as ``$4``; the plan's candidate sets of their own (``MatchPlan.sets``) follow."""
    if scoring == "bm25":
        lexemes = unquoted_lexemes(text)
        documents, frequencies = estimated_frequencies(lexemes, stats, vis.owner)
        extra: list[object] = [lexemes, frequencies, documents]
        rank: str | None = None
        counts: _Counts | None = _Counts("$4::text[]", "$6::float8", floors="$5::float8[]")
    else:
        extra, rank, counts = [plan.rank], "$4::tsquery", None
    first = 4 + len(extra)
    c = _Clauses(vis, first + len(plan.sets))
    return _KeywordStatement(
        head="",
        c=c,
        matches=[*(f"${first + i}::tsquery" for i in range(len(plan.sets))), "$1::tsquery"],
        rank=rank,
        counts=counts,
        args=[plan.match, limit, max_candidates, *extra, *plan.sets, *c.args],
    )


def _cover_density_sql(st: _KeywordStatement) -> str:
    """``ts_rank_cd`` of every candidate set, the owner's and the shared branch each cut to ``$2``.

    "+ interval '0 s'" (in ``_candidates``): never walk the (owner, created_at) index testing every
    row's tsvector (measured 20 ms for a 3k-row owner); find the matches by GIN, then keep the
    newest. Each candidate set is ranked where it is read and UNION drops the rows two sets share
    (same row, same rank query: same score). Joining the deduplicated ids back to ``memories`` for
    their tsvector let the planner hash the whole owner (15 of 20 ms for a 10k-memory owner,
    measured); ranking a shared row twice costs microseconds."""

    rank = st.rank
    if rank is None:
        raise ValueError("a keyword statement built for BM25 has no rank query")

    def branch(who: str) -> str:
        ranked = " UNION ".join(
            f"(SELECT n.id, n.created_at, ts_rank_cd(n.tsv, {rank}) AS score FROM ({_candidates(st, who, match)}) n)"
            for match in st.matches
        )
        return (
            f"(SELECT h.id, h.created_at, h.score FROM ({ranked}) h"
            " ORDER BY h.score DESC, h.created_at DESC, h.id LIMIT $2)"
        )

    return (
        f"{st.head} SELECT id, score FROM ({branch(st.c.own)} UNION ALL {branch(st.c.shared)}) u"
        " ORDER BY score DESC, created_at DESC, id LIMIT $2"
    )


def _candidates(st: _KeywordStatement, who: str, match: str) -> str:
    """One candidate set: the newest ``$3`` visible memories of ``who`` matching ``match``.

    With ``st.owner_scan`` the owner's rows are read through the owner index and each is tested
    (``ts_match_vq`` is the function behind ``@@``; called by name, the planner cannot take it
    to the GIN index). The GIN index reads every row of the table holding a question word,
    whoever owns it: with the question's tsquery computed inside the statement the planner
    guesses its selectivity, and after some ANALYZE runs it ANDed the owner index with the GIN
    index, 3-4 ms of a 1,000-memory owner's 5-6 ms statement among 210k memories, where testing
    the owner's rows costs a bounded ~1 ms. The same matches either way."""
    c = st.c
    test = f"ts_match_vq(m.tsv, {match})" if st.owner_scan and who == c.own else f"m.tsv @@ {match}"
    return (
        f"SELECT m.id, m.created_at, m.tsv FROM memories m WHERE {test} AND {who} AND {c.common}"
        " ORDER BY m.created_at + interval '0 s' DESC LIMIT $3"
    )


def _bm25_sql(st: _KeywordStatement) -> str:
    """BM25 (``logic.bm25``) of every candidate: each set read once (``_candidates``), each
    question lexeme's count in each candidate (``ts_rank_cd`` of the lexeme alone is 0.1 per
    occurrence), its document frequency among the candidates (raised to ``counts.floors``
    where given), the top ``$2``, and on each row the most question-word occurrences any
    candidate holds (the cover). No CTE is joined back to another: the planner cannot
    estimate their rows, and a nested loop over two of them cost 9 ms for 339 candidates."""
    head, c, matches, counts = st.head, st.c, st.matches, st.counts
    if counts is None:
        raise ValueError("a keyword statement built for ts_rank_cd has no BM25 counts")
    sets = " UNION ALL ".join(f"({_candidates(st, who, match)})" for match in matches for who in (c.own, c.shared))
    # sets of one match are disjoint (own rows, others' global rows); several share rows
    candidates = (
        f"u AS MATERIALIZED ({sets})"
        if len(matches) == 1
        else f"m AS MATERIALIZED ({sets}), u AS (SELECT DISTINCT ON (id) id, created_at, tsv FROM m)"
    )
    if counts.floors is None:
        lexemes = f"SELECT DISTINCT x AS lexeme, 0::float8 AS df FROM unnest({counts.lexemes}) AS x"
    else:
        lexemes = (
            "SELECT DISTINCT ON (e.lexeme) e.lexeme, coalesce(e.df, 0) AS df"
            f" FROM unnest({counts.lexemes}, {counts.floors}) AS e(lexeme, df) ORDER BY e.lexeme, e.df DESC"
        )
    k1, frequency = bm25_logic.K1, "greatest(t.hits, t.df)"
    # each lexeme's floor rides along with it, so no join back to the floors is needed
    return (
        f"{head}{',' if head else 'WITH'} {candidates},"
        f" l AS (SELECT w.lexeme, quote_literal(w.lexeme)::tsquery AS q, w.df FROM ({lexemes}) w),"
        " t AS (SELECT u.id, u.created_at, l.df, round(ts_rank_cd(u.tsv, l.q) * 10) AS tf,"
        "  count(*) OVER (PARTITION BY l.lexeme) AS hits FROM u JOIN l ON u.tsv @@ l.q),"
        f" n AS (SELECT ({counts.documents})::float8 AS n),"
        " s AS (SELECT t.id, t.created_at, sum("
        f"ln(1 + (greatest(n.n, {frequency}) - {frequency} + 0.5) / ({frequency} + 0.5))"
        f" * t.tf * {k1 + 1!r} / (t.tf + {k1!r})) AS score, sum(t.tf) AS occ"
        "  FROM t CROSS JOIN n GROUP BY t.id, t.created_at)"
        " SELECT s.id, s.score, max(s.occ) OVER () AS occurrences FROM s"
        " ORDER BY s.score DESC, s.created_at DESC, s.id LIMIT $2"
    )


async def recent(pool: asyncpg.Pool, vis: Visibility, limit: int) -> list[str]:
    """Newest first (the ``exact`` strategy and the last fallback)."""
    c = _Clauses(vis, 2)

    def branch(who: str) -> str:
        return (
            f"(SELECT m.id, m.created_at FROM memories m WHERE {who} AND {c.common}"
            " ORDER BY m.created_at DESC LIMIT $1)"
        )

    # No tie-breaker on id: it would defeat the (owner, created_at DESC) index when many rows
    # share a timestamp (a bulk import), forcing a sort of all the owner's rows.
    rows = await pool.fetch(
        f"SELECT id FROM ({branch(c.own)} UNION ALL {branch(c.shared)}) u ORDER BY created_at DESC LIMIT $1",
        limit,
        *c.args,
    )
    return [str(r["id"]) for r in rows]


async def fetch_rows(
    pool: asyncpg.Pool, vis: Visibility, ids: list[str], *, turns: bool = False
) -> dict[str, MemoryRow]:
    """The candidates' rows in one query, visibility re-checked (a stale vector payload cannot leak).

    ``turns``: also each row's ``turn``, a position among its session's stored chat turns in
    time order (``created_at`` keeps the order of turns within one event, so turns stored by
    different events are still neighbours), exact in its differences up to
    ``fusion.MAX_DISTANCE``, for the ``chat_turn`` rows sharing their session with another
    candidate (only they can boost each other as neighbours). Same statement, no second round
    trip, computed in SQL (``_rows_sql``): per such candidate, its next turns come from one short
    scan of ``memories_session_turns``, instead of numbering every turn of its sessions (~7 ms on
    LoCoMo-sized owners, measured).
    """
    if not ids:
        return {}
    c = _Clauses(vis, 2)
    records = await pool.fetch(_rows_sql(c, turns), _uuid_array(ids), *c.args)
    return {r[0]: MemoryRow(*r) for r in records}  # the columns in MemoryRow's order (``_ROW_NAMES``)


def _uuid_array(ids: list[str]) -> str:
    """Distinct ``ids`` as the text of a ``uuid[]`` (``$1::text::uuid[]``): asyncpg checks every
    element of a list parameter against several abstract base classes (~0.08 ms of client CPU for
    200 ids), where PostgreSQL parses the text for about half that more than the binary form."""
    return "{" + ",".join(dict.fromkeys(ids)) + "}"


#: The columns ``fetch_rows`` reads, in ``MemoryRow``'s field order (a record unpacked into it
#: positionally: no read by name), ids and metadata as text (asyncpg decodes text straight to
#: ``str``; a uuid to an object first); metadata is never NULL (the column is ``NOT NULL``).
_ROW_NAMES = ("id", "content", "type", "created_at", "session_id", "scope", "metadata", "agent_id")
_AS_TEXT = ("id", "metadata")
#: what each primary-key probe of ``_rows_sql`` returns: the same columns as stored, and the source
_PROBED_COLUMNS = ", ".join(f"m.{n}" for n in (*_ROW_NAMES, "source"))


#: ``created_at`` as microseconds since the Unix epoch (``MemoryRow.created_at``; exact: ``extract``
#: gives a numeric): asyncpg's timestamp decoding was ~0.15 ms of a search's 200 rows.
_MICROS = "(extract(epoch FROM {0}.created_at) * 1000000)::int8 AS created_at"


def _row_columns(alias: str) -> str:
    """``_ROW_NAMES`` of ``alias`` as ``fetch_rows`` reads them."""
    return ", ".join(
        f"{alias}.{n}::text AS {n}" if n in _AS_TEXT else _MICROS.format(alias) if n == "created_at" else f"{alias}.{n}"
        for n in _ROW_NAMES
    )


def _rows_sql(c: _Clauses, turns: bool) -> str:
    """The visible rows of ``$1`` (distinct ids); with ``turns``, one more column, ``turn``.

    A session's chat-turn candidates in time order are walked in SQL: each looks up its
    session's next ``MAX_DISTANCE`` stored chat turns (any state: a turn counts as it was
    stored) and the next candidate is that many turns further when found among them, and
    ``MAX_DISTANCE + 1`` further otherwise (all a boost reaching ``MAX_DISTANCE`` turns can tell
    apart from a larger gap); a candidate's ``turn`` is the sum of the steps before it. So the
    differences of two candidates' turns are exact up to ``MAX_DISTANCE`` and larger beyond.
    ``turn`` is NULL for a row that is not a chat turn of a session, or whose session holds no
    other candidate; the last candidate of a session looks up nothing.
    """
    # One primary-key probe per id, whatever the planner knows: a plain join with the unnested
    # ids let it hash the owner's every row (its whole table when small or not analysed yet:
    # ~2 ms of 150 ids on a 2k-memory table, ~6 ms before ANALYZE, measured), and ``m.id =
    # ANY($1)`` beside ``m.owner = ...`` walk an owner-prefixed index (36 ms for 200 ids of a
    # 10k-memory owner). A LATERAL subquery with LIMIT 1 cannot be flattened into a join.
    probed = (
        f"unnest($1::text::uuid[]) AS u(id) CROSS JOIN LATERAL (SELECT {_PROBED_COLUMNS} FROM memories m"
        f" WHERE m.id = u.id AND (({c.own}) OR ({c.shared})) AND {c.common} LIMIT 1) m"
    )
    if not turns:
        return f"SELECT {_row_columns('m')} FROM {probed}"
    reach = MAX_DISTANCE
    return (
        f"WITH c AS MATERIALIZED (SELECT m.* FROM {probed}),"
        " t AS (SELECT c.*, lead(c.id) OVER w AS next_id, lag(c.id) OVER w AS previous_id"
        "  FROM c WHERE c.source = 'chat_turn' AND c.session_id IS NOT NULL"
        "  WINDOW w AS (PARTITION BY c.session_id ORDER BY c.created_at, c.id)),"
        " s AS (SELECT t.*, CASE WHEN t.next_id IS NOT NULL THEN coalesce(array_position(ARRAY("
        "   SELECT m.id FROM memories m"
        f"   WHERE m.owner = {c.owner} AND m.session_id = t.session_id AND m.source = 'chat_turn'"
        "   AND (m.created_at, m.id) > (t.created_at, t.id)"
        f"   ORDER BY m.created_at, m.id LIMIT {reach}), t.next_id), {reach + 1}) END AS step FROM t)"
        f" SELECT {_row_columns('c')}, NULL::bigint AS turn FROM c"
        "  WHERE c.source IS DISTINCT FROM 'chat_turn' OR c.session_id IS NULL"
        f" UNION ALL SELECT {_row_columns('s')}, CASE WHEN s.previous_id IS NOT NULL THEN sum(s.step) OVER ("
        "  PARTITION BY s.session_id ORDER BY s.created_at, s.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        " WHEN s.next_id IS NOT NULL THEN 0 END FROM s"
    )


#: The vector stores rank without metadata: a metadata-filtered search asks them for this many
#: times its candidates (at most ``MAX_FILTERED_CANDIDATES``), then keeps those the filter passes.
FILTER_OVERFETCH = 10
MAX_FILTERED_CANDIDATES = 1000


async def vector_search(
    store: VectorStore,
    signature: str,
    vis: Visibility,
    vector: list[float] | NDArray[np.float32],
    limit: int,
    pool: asyncpg.Pool | None = None,
) -> RankedList:
    """Tier 1/2 through the port: ``(memory_id, cosine)`` best first; with ``vis.metadata``, only
    the candidates that pass it (checked in ``pool``)."""
    filtered = vis.metadata is not None and pool is not None
    asked = max(limit, min(limit * FILTER_OVERFETCH, MAX_FILTERED_CANDIDATES)) if filtered else limit
    hits = await store.search(
        signature,
        VectorQuery(
            owner=vis.owner,
            vector=vector,
            limit=asked,
            session_id=vis.session_id,
            agent_id=vis.agent_id,
            types=list(vis.types) if vis.types else None,
            include_global=True,
            created_after=vis.created_after(),
        ),
    )
    ranked = [(h.memory_id, float(h.score)) for h in hits]
    if not filtered or not ranked:
        return ranked
    assert pool is not None
    passing = await visible_ids(pool, vis, [memory_id for memory_id, _ in ranked])
    return [(memory_id, score) for memory_id, score in ranked if memory_id in passing][:limit]


async def visible_ids(pool: asyncpg.Pool, vis: Visibility, ids: list[str]) -> set[str]:
    """The ids among ``ids`` that ``vis`` lets a request see (its metadata filter included)."""
    c = _Clauses(vis, 2)
    rows = await pool.fetch(
        f"SELECT m.id::text FROM memories m WHERE m.id = ANY($1::uuid[]) AND (({c.own}) OR ({c.shared}))"
        f" AND {c.common}",
        ids,
        *c.args,
    )
    return {r[0] for r in rows}


async def embed_query(nc: Client, text: str, timeout: float, owner: str | None = None) -> EmbedResult:
    """The query vector from the embed service (raises ``DependencyDown`` when it is away),
    cached there for ``owner`` alone."""
    result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=[text], owner=owner), timeout=timeout)
    return result


@dataclass(frozen=True)
class StoreMeta:
    """One ``memory_vec_meta`` row: what a store searches now, and a change in progress."""

    store: str
    signature: str | None
    dim: int | None
    pending: str | None


async def read_vec_meta(pool: asyncpg.Pool) -> dict[str, StoreMeta]:
    """``memory_vec_meta`` by store (the engine keeps it for ``meta_ttl_s``)."""
    rows = await pool.fetch("SELECT store, embedding_signature, active_dim, pending_signature FROM memory_vec_meta")
    return {
        r["store"]: StoreMeta(r["store"], r["embedding_signature"], r["active_dim"], r["pending_signature"])
        for r in rows
    }
