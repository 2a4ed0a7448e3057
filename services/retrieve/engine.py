"""Retrieval orchestration: strategy, concurrent tiers, fallbacks, fusion, budget, timing.

``Engine.retrieve``: the owner's effective settings (cached); ``plan_logic.plan`` picks the tiers
(hybrid runs full-text and vector search concurrently; the vector side tries the stores in order,
each failure degrading to the next, then to full-text, then to newest-first); the ranked lists
are fused (RRF or score fusion with ``ftsWeight``/``vecWeight``, the keyword weight scaled by how
much of the question its best match covers), rows fetched in one query (or read from the in-memory
keyword index that ranked the question, when it holds every candidate), session/neighbour boosts
applied, then the relevance threshold (when asked), limit and token budget; returned memories
are queued for the ``last_accessed_at`` touch (not on ``dry_run``). A degraded tier is never an
error but a ``TierReport`` with its reason and a ``from->to:code`` fallback; only Postgres
unreachable is a 503. Hybrid fuses the top ``rrfDepth`` of each list (so at most twice that many
results); the others fetch ``limit``.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Literal

import asyncpg
import msgspec
import numpy as np
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeout
from numpy.typing import NDArray

from memoryd.errors import DependencyDown, MemorydError, RateLimited, ValidationFailed
from memoryd.schemas.retrieval import EmbedResult, RetrieveRequest, RetrieveResult, Tier, TierReport
from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.keyword_memory import (
    EXACT_VECTOR_ROWS_MAX,
    VECTOR_ROWS_MAX,
    HeldRanking,
    KeywordIndexes,
)
from services.retrieve.adapters.postgres_stats import read_term_stats
from services.retrieve.adapters.postgres_touch import Toucher
from services.retrieve.logic import time_window
from services.retrieve.logic.bm25 import KeywordRanking, KeywordScoring
from services.retrieve.logic.breaker import Breaker
from services.retrieve.logic.coverage import keyword_weight
from services.retrieve.logic.fusion import (
    Fused,
    RankedList,
    Strategy,
    budget_tokens,
    normalize_query,
    parse_strategy,
    rrf_fuse,
    score_fuse,
)
from services.retrieve.logic.plan import (
    Attempt,
    FallbackCode,
    MemoryRow,
    answer,
    boost,
    fallback_labels,
    plan,
    recency_ranking,
    relevant,
    single_ranking,
    store_failure,
    store_mismatch,
)
from services.retrieve.logic.plan import tier_of as credit_tier
from shared import metadata_filter
from shared.observability.logging import get_logger
from shared.observability.metrics import RETRIEVE_FALLBACKS, RETRIEVE_RESULTS, RETRIEVE_SECONDS
from shared.ratelimit import RateLimiter
from shared.settings.memory import MemorySettings
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorStore

from .query_vectors import QueryVectors
from .rerank import Reranker
from .ttl import TtlValue

log = get_logger(__name__)
_PG_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)

NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Positive = Annotated[float, msgspec.Meta(gt=0)]


class EngineConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Service settings, ``MEMORYD_RETRIEVE_<FIELD>`` (per-owner behaviour is in runtime settings)."""

    #: seconds a retrieval waits for the query vector before it searches without vectors
    embed_timeout_s: Positive = 1.0
    #: query vectors kept in this process, so a repeated query skips the embed round trip (0 = off)
    query_cache_size: Annotated[int, msgspec.Meta(ge=0)] = 4096
    #: seconds a kept query vector is used
    query_cache_ttl_s: Positive = 600.0
    #: seconds one vector store may take before the next one (or full text) serves
    store_timeout_s: Positive = 2.0
    #: how long an owner's runtime settings are cached (announced changes apply at once)
    settings_ttl_s: NonNegative = 5.0
    #: how often the vector stores' metadata (active signature, pending switch) is re-read
    meta_ttl_s: NonNegative = 5.0
    #: how often the queued `last_accessed_at` updates are written
    touch_interval_s: Positive = 1.0
    #: a memory's `last_accessed_at` is written only when it moves at least this far
    touch_granularity_s: NonNegative = 600.0
    #: consecutive failures of the embed service or a store before it is skipped
    breaker_threshold: Annotated[int, msgspec.Meta(ge=1)] = 3
    #: seconds a tripped dependency is skipped before it is tried again
    breaker_cooldown_s: NonNegative = 5.0
    #: comma-separated providers (or models) that reject the `system` role, so injected memories go into a user
    #: message; empty = the built-in list
    no_system_providers: str = ""
    #: how often the planner's term and owner frequencies behind pruning are re-read
    term_stats_ttl_s: NonNegative = 60.0
    #: a hybrid search whose keyword tier the in-memory index served reads its candidates' rows from that index
    #: when it holds them all (no round trip), else from PostgreSQL; the same rows either way
    rows_in_memory: bool = True
    #: a hybrid search whose keyword tier the in-memory index served ranks the owner's vectors there too when it
    #: holds them (owners up to `MEMORYD_RETRIEVE_VECTOR_ROWS_MAX` memories, pgvector searching first; exactly up
    #: to `MEMORYD_RETRIEVE_EXACT_VECTOR_ROWS_MAX`, approximately from packed vectors above), without the vector
    #: store's round trip; for a larger owner held, a search not narrowed to a session, agent or types asks
    #: pgvector for its nearest without the per-row visibility probe and checks them against the index
    vectors_in_memory: bool = True
    #: owners with at most this many memories have their vectors held in memory
    vector_rows_max: Annotated[int, msgspec.Meta(ge=0)] = VECTOR_ROWS_MAX
    #: held vectors of owners with at most this many memories are float rows ranked exactly (1.5 kB each at
    #: 384 dimensions); a larger owner's are packed (436 bytes each) and ranked approximately
    exact_vector_rows_max: Annotated[int, msgspec.Meta(ge=0)] = EXACT_VECTOR_ROWS_MAX


#: how a hybrid search's vector tier uses the keyword tier's in-memory index (``_Run._vector_mode``)
VectorMode = Literal["held", "unchecked", "checked"]
#: pgvector's unchecked nearest are asked for the fused depth exactly (past ``hnsw.ef_search``, 100 like
#: the default depth, the index scan goes on and costs about a third more); the visible among them serve when
#: they fall short of the depth by at most this fraction of it (archived or expired memories among
#: them), else the checked statement answers
UNCHECKED_SHORTFALL = 0.1

SettingsGetter = Callable[[str], Awaitable[MemorySettings]]
#: The query's vector: ``(text, timeout_s, owner) -> EmbedResult``; the embed RPC unless a
#: caller (the latency benchmark's in-process floor) supplies vectors itself.
Embedder = Callable[[str, float, str], Awaitable[EmbedResult]]


class Engine:
    reranker: Reranker | None = None  # set by app.py; used when an owner's ``rerank`` is on

    def __init__(
        self,
        *,
        pool: asyncpg.Pool,
        nc: Client,
        stores: Sequence[VectorStore],
        settings: SettingsGetter,
        toucher: Toucher,
        config: EngineConfig = EngineConfig(),
        embedder: Embedder | None = None,
        rows_pool: asyncpg.Pool | None = None,
    ) -> None:
        self.pool = pool
        #: the candidates' rows (``tiers.fetch_rows``): a pool with generic plans when given
        #: (``create_pool(generic_plans=True)``; its plan is a primary-key probe per id for any owner)
        self.rows_pool = rows_pool or pool
        self.nc = nc
        self.embedder: Embedder = embedder or (lambda text, timeout, owner: tiers.embed_query(nc, text, timeout, owner))
        self.query_vectors = QueryVectors(config.query_cache_size, config.query_cache_ttl_s)
        self.stores = list(stores)
        self.settings = settings
        self.toucher = toucher
        self.config = config
        self.meta = TtlValue(lambda: tiers.read_vec_meta(pool), config.meta_ttl_s)
        self.term_stats = TtlValue(lambda: read_term_stats(pool), config.term_stats_ttl_s)
        #: the owners' in-memory keyword indexes (searched for owners with ``keywordIndex=memory``)
        self.keyword_indexes = KeywordIndexes(
            pool, vector_rows_max=config.vector_rows_max, exact_vector_rows_max=config.exact_vector_rows_max
        )
        self.fallbacks: Counter[str] = Counter()
        self.limiter = RateLimiter()  # searchesPerSecond per owner (retrieve and inject)
        self.breakers: dict[str, Breaker] = {
            name: Breaker(config.breaker_threshold, config.breaker_cooldown_s)
            for name in ["embed", *(s.name for s in self.stores)]
        }

    # --- the request -----------------------------------------------------------------------
    async def retrieve(self, req: RetrieveRequest) -> RetrieveResult:
        started = time.perf_counter()
        metadata = metadata_filter.parse(req.filters) if req.filters else None
        try:
            settings = await self.settings(req.owner)
        except _PG_ERRORS as exc:
            raise DependencyDown(f"postgres unavailable: {type(exc).__name__}") from exc
        wait = self.limiter.take(req.owner, settings.searches_per_second, time.monotonic())
        if wait:
            raise RateLimited(f"owner {req.owner!r} is over {settings.searches_per_second} searches/s", wait)
        try:
            strategy = parse_strategy(req.strategy or settings.strategy)
        except ValueError as exc:
            raise ValidationFailed(str(exc), field="$.strategy") from exc
        if req.no_memory or not settings.enabled:
            reason = "no_memory requested" if req.no_memory else "memory is disabled for this owner (enabled=false)"
            return RetrieveResult(memories=[], strategy=strategy.value, tokens_used=0, disabled_reason=reason)
        query = normalize_query(req.query)
        vis = tiers.Visibility(
            req.owner,
            req.session_id,
            tuple(req.types) if req.types else None,
            settings.retention_days,
            metadata,
            agent_id=req.agent_id,
        )
        run = _Run(self, vis, query)
        ranked, vector_tier, recent_only = await run.rank(strategy, req.limit, settings)
        boost = strategy is Strategy.HYBRID and not recent_only
        rows = await self._rows(vis, ranked, turns=boost and settings.neighbour_boost > 0, held=run.held)
        if boost and settings.temporal_window > 0 and settings.temporal_reasoning > 0 and run.held is not None:
            ranked, rows = await self._window(run, ranked, rows, settings)
        if boost:
            ranked = self._boost(ranked, rows, query, settings)
        fallbacks = fallback_labels(run.attempts)
        if settings.rerank and not recent_only and self.reranker is not None:
            ranked, skipped = await self.reranker.rerank(req.owner, query, ranked, rows, settings.rerank_depth)
            fallbacks += skipped
        memories, tokens = answer(
            relevant(ranked, req.threshold),
            rows,
            limit=req.limit,
            max_tokens=budget_tokens(req.max_tokens, settings.max_tokens),
            tier=lambda f: credit_tier(f, vector_tier, recent=recent_only),
        )
        if memories and not req.dry_run:
            self.toucher.touch((m.id for m in memories), datetime.now(UTC))
        total_ms = _ms(started)
        self._observe(strategy, run.attempts, total_ms, len(memories))
        return RetrieveResult(
            memories=memories,
            strategy=strategy.value,
            tokens_used=tokens,
            tiers=[_report(a) for a in run.attempts],
            fallbacks=fallbacks,
            ms=round(total_ms, 3),
            embed_ms=None if run.embed_ms is None else round(run.embed_ms, 3),
        )

    async def keyword_ranking(
        self, vis: tiers.Visibility, query: str, limit: int, s: MemorySettings, scoring: KeywordScoring | None = None
    ) -> KeywordRanking:
        """Tier 0 with the owner's candidate cap and match pruning, scored by ``scoring`` (by default
        the owner's ``keywordRanking``); errors propagate."""
        return await tiers.keyword_search(
            self.pool,
            vis,
            query,
            limit,
            s.keyword_max_candidates or None,
            stats=await self.term_stats.get(),
            match_budget=s.keyword_match_budget,
            widen_below=s.keyword_widen_below,
            scoring=scoring or s.keyword_ranking,
            memory=self.keyword_indexes if s.keyword_index == "memory" else None,
        )

    async def _rows(
        self, vis: tiers.Visibility, ranked: list[Fused], *, turns: bool, held: HeldRanking | None = None
    ) -> dict[str, MemoryRow]:
        """The candidates' rows: from the in-memory index that served ``held`` when it holds them all
        (``rows_in_memory``), else ``tiers.fetch_rows``."""
        ids = [f.memory_id for f in ranked]
        if held is not None and self.config.rows_in_memory and ranked:
            found = self.keyword_indexes.rows(held, list(dict.fromkeys(ids)), turns=turns)
            if found is not None:
                return found
        try:
            return await tiers.fetch_rows(self.rows_pool, vis, ids, turns=turns)
        except _PG_ERRORS as exc:
            raise DependencyDown(f"postgres unavailable: {type(exc).__name__}") from exc

    async def _window(
        self, run: _Run, ranked: list[Fused], rows: dict[str, MemoryRow], s: MemorySettings
    ) -> tuple[list[Fused], dict[str, MemoryRow]]:
        """The candidates with up to ``temporalWindow`` keyword matches stored within the time the
        question asks about (``logic.time_window``), fused again with them below the keyword list's
        top, and their rows; unchanged when the question asks no time or none is found (and not
        called without ``temporalReasoning``: only its gains can lift them)."""
        held = run.held
        assert held is not None and run.lists is not None
        ranges = time_window.asked_ranges(run.query, datetime.now(UTC).date(), ranked, rows)
        if not ranges:
            return ranked, rows
        present = {f.memory_id for f in ranked}
        within = await self.keyword_indexes.within(held, ranges, s.temporal_window + len(present))
        picks = time_window.extra(within or [], present, s.temporal_window)
        if not picks:
            return ranked, rows
        lists = time_window.window_lists(run.lists, s.rrf_depth, picks)
        ranked = fuse_lists(lists, s, run.query, held.cover, s.rrf_depth + len(picks))
        return ranked, await self._rows(run.vis, ranked, turns=s.neighbour_boost > 0, held=held)

    def _boost(self, ranked: list[Fused], rows: dict[str, MemoryRow], query: str, s: MemorySettings) -> list[Fused]:
        """Hybrid re-scoring: a share of the best score of a result's session, of the scores of its
        neighbouring turns and of its own score when the question names its speaker (the owner's
        ``sessionBoost``/``neighbourBoost``/``speakerBoost``; 0 turns one off), and of its own score
        when the question asks when and the result says when (``temporalBoost``), and of its own score
        as far as its time answers the time the question asks about (``temporalReasoning``); the
        session score's breadth (``sessionEvidence``) and the spread over sessions (``sessionSpread``);
        how far a time match lifts towards the best result (``temporalLift``)."""
        return boost(
            ranked,
            rows,
            s.session_boost,
            s.neighbour_boost,
            s.speaker_boost,
            query,
            s.temporal_boost,
            s.temporal_reasoning,
            datetime.now(UTC).date(),
            s.session_evidence,
            s.session_spread,
            s.temporal_lift,
        )

    def _observe(self, strategy: Strategy, attempts: list[Attempt], total_ms: float, results: int) -> None:
        for attempt in attempts:
            if attempt.served or attempt.ms > 0:
                _seconds(strategy.value, attempt.tier).observe(attempt.ms / 1000)
            if not attempt.served and attempt.code is not None:
                _fallbacks(attempt.code).inc()
                self.fallbacks[attempt.code] += 1
        _seconds(strategy.value, "all").observe(total_ms / 1000)
        RETRIEVE_RESULTS.observe(results)


# The labelled children of the retrieve metrics, looked up once per label set (few and fixed:
# strategies x tiers, fallback codes), not per request.
_seconds = functools.cache(RETRIEVE_SECONDS.labels)
_fallbacks = functools.cache(RETRIEVE_FALLBACKS.labels)


class _Run:
    """The tiers of one request: what was tried, in order, and what it returned."""

    def __init__(self, engine: Engine, vis: tiers.Visibility, query: str) -> None:
        self.e = engine
        self.vis = vis
        self.query = query
        self.attempts: list[Attempt] = []
        self.embed_ms: float | None = None
        #: the keyword ranking the in-memory index served, when the ranked candidates include it
        self.held: HeldRanking | None = None
        #: hybrid's ranked lists as fused (the time-window candidates are fused with them again)
        self.lists: dict[str, RankedList] | None = None

    async def rank(self, strategy: Strategy, limit: int, s: MemorySettings) -> tuple[list[Fused], Tier, bool]:
        """The ranked candidates, the vector tier that served (or would have), recent-only?"""
        p = plan(strategy, self.query)
        first_vector: Tier = self.e.stores[0].name if self.e.stores else "pgvector"  # type: ignore[assignment]
        if p.recent_only:
            if p.skip_code is not None:
                lead: Tier = first_vector if strategy is Strategy.SEMANTIC else "keyword"
                self.attempts.append(Attempt(lead, False, code=p.skip_code, reason=p.skip_reason))
            return await self._recent(limit), first_vector, True
        if strategy is Strategy.HYBRID:
            depth = s.rrf_depth
            (fts, fts_attempt), (vec, vec_tier, vec_attempts) = await self._both_tiers(depth, s, p.keyword)
            if fts_attempt is None:
                fts_attempt = Attempt("keyword", False, code=p.skip_code, reason=p.skip_reason)
            self.attempts += [fts_attempt, *vec_attempts]
            lists: dict[str, RankedList] = {}
            if fts is not None:
                lists["fts"] = fts.ranked
            if vec is not None:
                lists["vec"] = vec
            if not lists:
                return await self._recent(limit), vec_tier, True
            self.held = fts if isinstance(fts, HeldRanking) else None
            self.lists = lists
            return fuse_lists(lists, s, self.query, fts.cover if fts else 0.0), vec_tier, False
        vec, vec_tier, vec_attempts = await self._vector(limit)
        self.attempts += vec_attempts
        if vec is not None:
            return single_ranking(vec, "vec"), vec_tier, False
        if p.skip_code is not None:
            self.attempts.append(Attempt("keyword", False, code=p.skip_code, reason=p.skip_reason))
        else:
            fts, attempt = await self._keyword(limit, s)
            self.attempts.append(attempt)
            if fts is not None:
                return single_ranking(fts.ranked, "fts"), vec_tier, False
        return await self._recent(limit), vec_tier, True

    async def _keyword(self, limit: int, s: MemorySettings) -> tuple[KeywordRanking | None, Attempt]:
        started = time.perf_counter()
        try:
            found = await self.e.keyword_ranking(self.vis, self.query, limit, s)
        except _PG_ERRORS as exc:
            log.warning("retrieve.keyword_failed", error=str(exc))
            return None, Attempt("keyword", False, _ms(started), "keyword_failed", f"full-text search failed: {exc}")
        return found, Attempt("keyword", True, _ms(started), hits=len(found.ranked))

    async def _recent(self, limit: int) -> list[Fused]:
        started = time.perf_counter()
        try:
            ids = await tiers.recent(self.e.pool, self.vis, limit)
        except _PG_ERRORS as exc:
            raise DependencyDown(f"postgres unavailable: {type(exc).__name__}") from exc
        self.attempts.append(Attempt("recent", True, _ms(started), hits=len(ids)))
        return recency_ranking(ids)

    async def _both_tiers(
        self, depth: int, s: MemorySettings, keyword: bool
    ) -> tuple[tuple[KeywordRanking | None, Attempt | None], tuple[RankedList | None, Tier, list[Attempt]]]:
        """Hybrid's keyword and vector tiers, each ``depth`` deep, by ``_vector_mode``."""
        keyword_run = self._keyword(depth, s) if keyword else _nothing()
        mode = await self._vector_mode(s, keyword)
        if mode == "checked":
            return await asyncio.gather(keyword_run, self._vector(depth))
        if mode == "held":  # the vector tier waits for the keyword tier's index
            fts_part, q = await asyncio.gather(keyword_run, self._query_vector())
            held = fts_part[0] if isinstance(fts_part[0], HeldRanking) else None
            return fts_part, await self._search_stores(q, depth, held)
        # pgvector's nearest beside the keyword tier, then checked against its index
        fts_part, (q, (vec, vec_tier, vec_attempts)) = await asyncio.gather(keyword_run, self._vector_unchecked(depth))
        if vec is not None and vec_tier == "pgvector":
            held = fts_part[0] if isinstance(fts_part[0], HeldRanking) else None
            vec = self._visible_part(held, vec, depth)
            if vec is None:  # too few visible, or no index to check with: the checked statement
                return fts_part, await self._search_stores(q, depth)
        return fts_part, (vec, vec_tier, vec_attempts)

    async def _vector_mode(self, s: MemorySettings, keyword: bool) -> VectorMode:
        """How this hybrid search's vector tier uses the keyword tier's in-memory index: ``held``, it
        ranks the owner's vectors there (held for owners under the cap); ``unchecked``, pgvector's
        nearest without the per-row visibility probe, checked against the index once the keyword tier
        has served (an owner held over the cap, a request not narrowed to a session, agent or types);
        else ``checked``, pgvector's statement beside the keyword tier. pgvector must search first;
        the signature whose vectors the indexes hold is set here, from the stores' metadata."""
        indexes = self.e.keyword_indexes
        stores = self.e.stores
        if not (self.e.config.vectors_in_memory and keyword and s.keyword_index == "memory" and stores):
            return "checked"
        if stores[0].name != "pgvector":
            indexes.vectors_of = None
            return "checked"
        row = (await self.e.meta.get()).get("pgvector")
        indexes.vectors_of = row.signature if row is not None else None
        if indexes.vectors_of is None:
            return "checked"
        if indexes.holds_vectors(self.vis.owner):
            return "held"
        vis = self.vis
        narrowed = vis.session_id is not None or vis.agent_id is not None or vis.types is not None
        unchecked = indexes.is_held(vis.owner) and not narrowed and vis.metadata is None
        return "unchecked" if unchecked else "checked"

    async def _vector_unchecked(self, asked: int) -> tuple[_QueryVector, tuple[RankedList | None, Tier, list[Attempt]]]:
        """The query vector, and the stores' answer with pgvector's unchecked nearest (``asked``)."""
        q = await self._query_vector()
        return q, await self._search_stores(q, asked, unchecked=True)

    def _visible_part(self, held: HeldRanking | None, ranked: RankedList, depth: int) -> RankedList | None:
        """Of pgvector's unchecked nearest (``depth`` were asked), those the request sees, by the index
        that served ``held``; None when there is no such index, or more than ``UNCHECKED_SHORTFALL``
        of ``depth`` are invisible while more vectors may be (the checked statement answers then)."""
        counts = self.e.keyword_indexes.vector_counts
        seen = None if held is None else self.e.keyword_indexes.visible_among(held, [m for m, _ in ranked])
        if seen is None:
            counts["checked_again:not_held"] += 1
            return None
        kept = [hit for hit, ok in zip(ranked, seen, strict=True) if ok]
        if len(kept) < depth * (1 - UNCHECKED_SHORTFALL) and len(ranked) >= depth:
            counts["checked_again:too_few_visible"] += 1
            return None
        counts["unchecked"] += 1
        return kept

    async def _vector(self, limit: int) -> tuple[RankedList | None, Tier, list[Attempt]]:
        """Embed the query, then try each store in order; the first that answers serves."""
        return await self._search_stores(await self._query_vector(), limit)

    async def _query_vector(self) -> _QueryVector:
        """The query's vector and signature, and the stores' metadata as of it; or the attempt that
        failed (no store, or no vector)."""
        stores = self.e.stores
        first: Tier = stores[0].name if stores else "pgvector"  # type: ignore[assignment]
        if not stores:
            return _QueryVector(failed=Attempt(first, False, code="store_down", reason="no vector store configured"))
        started = time.perf_counter()
        meta = await self.e.meta.get()
        searched = {row.signature for store in stores if (row := meta.get(store.name)) and row.signature}
        vector, signature, failure = await self._embed(searched)
        if failure is not None:
            return _QueryVector(failed=Attempt(first, False, _ms(started), failure[0], failure[1]))
        assert vector is not None and signature is not None
        return _QueryVector(vector, signature, await self._meta_after_switch(meta, signature))

    async def _search_stores(
        self, q: _QueryVector, limit: int, held: HeldRanking | None = None, *, unchecked: bool = False
    ) -> tuple[RankedList | None, Tier, list[Attempt]]:
        """Try each store in order with the query vector; the first that answers serves (pgvector's
        vectors ranked from the in-memory index that served ``held``, when it holds them; with
        ``unchecked``, pgvector's nearest without visibility, for the caller to check)."""
        stores = self.e.stores
        first: Tier = stores[0].name if stores else "pgvector"  # type: ignore[assignment]
        if q.failed is not None:
            return None, first, [q.failed]
        vector, signature, meta = q.vector, q.signature, q.meta
        assert vector is not None and signature is not None
        attempts: list[Attempt] = []
        for store in stores:
            tier: Tier = store.name  # type: ignore[assignment]
            row = meta.get(store.name)
            active = row.signature if row is not None and row.signature else signature
            problem = (
                None if row is None else store_mismatch(row.signature, row.pending, row.dim, signature, len(vector))
            )
            breaker = self.e.breakers[store.name]
            if problem is None and not breaker.allow(time.monotonic()):
                problem = (
                    "store_circuit_open",
                    f"{store.name} skipped for {breaker.retry_in(time.monotonic()):.1f} s "
                    f"after {breaker.failures} failures ({breaker.last_error})",
                )
            if problem is not None:
                attempts.append(Attempt(tier, False, code=problem[0], reason=problem[1]))
                continue
            at = time.perf_counter()
            if held is not None and store.name == "pgvector" and self.vis.metadata is None:
                found = self.e.keyword_indexes.nearest(held, active, vector, limit)
                if found is not None:
                    attempts.append(Attempt(tier, True, _ms(at), hits=len(found)))
                    return found, tier, attempts
            try:
                async with asyncio.timeout(self.e.config.store_timeout_s):  # no task of its own, unlike wait_for
                    ranked: RankedList
                    if unchecked and isinstance(store, PgVectorStore):
                        hits = await store.search_unchecked(active, self.vis.owner, vector, limit)
                        ranked = [(h.memory_id, float(h.score)) for h in hits]
                    else:
                        ranked = await tiers.vector_search(store, active, self.vis, vector, limit, self.e.pool)
            except Exception as exc:
                code, reason = store_failure(store.name, exc, self.e.config.store_timeout_s)
                breaker.failure(time.monotonic(), reason)
                if code == "store_error":
                    log.warning("retrieve.store_failed", store=store.name, exc_info=exc)
                attempts.append(Attempt(tier, False, _ms(at), code, reason))
                continue
            breaker.success()
            attempts.append(Attempt(tier, True, _ms(at), hits=len(ranked)))
            return ranked, tier, attempts
        return None, attempts[-1].tier if attempts else first, attempts

    async def _meta_after_switch(self, meta: dict[str, tiers.StoreMeta], signature: str) -> dict[str, tiers.StoreMeta]:
        """``meta`` re-read when the query vector is of a signature it still calls pending: the
        reindex may have switched since it was read, and the stores then search that signature."""
        if not any(row.signature and row.pending == signature for row in meta.values()):
            return meta
        self.e.meta.invalidate()
        return await self.e.meta.get()

    async def _embed(
        self, searched: set[str]
    ) -> tuple[NDArray[np.float32] | None, str | None, tuple[FallbackCode, str] | None]:
        """The query's vector and signature: this process's cache while a store searches its
        signature (``searched``), else the embed service."""
        if (kept := self.e.query_vectors.get(self.vis.owner, self.query, searched)) is not None:
            self.embed_ms = 0.0
            return kept[0], kept[1], None
        breaker = self.e.breakers["embed"]
        now = time.monotonic()
        if not breaker.allow(now):
            return (
                None,
                None,
                (
                    "embed_circuit_open",
                    f"embed skipped for {breaker.retry_in(now):.1f} s "
                    f"after {breaker.failures} failures ({breaker.last_error})",
                ),
            )
        started = time.perf_counter()
        try:
            result = await self.e.embedder(self.query, self.e.config.embed_timeout_s, self.vis.owner)
        except DependencyDown as exc:
            timed_out = isinstance(exc.__cause__, NatsTimeout)
            code: FallbackCode = "embed_timeout" if timed_out else "embed_unavailable"
            breaker.failure(time.monotonic(), code)
            return None, None, (code, f"embed service: {exc.description}; searched without vectors")
        except MemorydError as exc:
            breaker.failure(time.monotonic(), "embed_failed")
            return None, None, ("embed_failed", f"embed service refused the query: {exc.description}")
        finally:
            self.embed_ms = _ms(started)
        breaker.success()
        if not result.vectors or not result.vectors[0] or not all(map(math.isfinite, result.vectors[0])):
            return None, None, ("embed_failed", "embed service returned no usable vector")
        vector = np.asarray(result.vectors[0], dtype=np.float32)  # what the stores search with
        self.e.query_vectors.put(self.vis.owner, self.query, result.signature, vector)
        return vector, result.signature, None


def fuse_lists(
    lists: dict[str, RankedList], s: MemorySettings, query: str, cover: float, depth: int | None = None
) -> list[Fused]:
    """Hybrid's fusion of the ranked lists with the owner's ``fusion`` settings; score fusion
    weighs the keyword list by how much of ``query`` its best match covers (``ftsFullCoverage``;
    ``cover``: the keyword tier's ``KeywordRanking.cover``). ``depth``: of each list (default
    ``rrfDepth``; deeper for a keyword list extended with time-window candidates)."""
    depth = s.rrf_depth if depth is None else depth
    if s.fusion == "score":
        fts_weight = keyword_weight(s.fts_weight, cover, query, s.fts_full_coverage, s.fts_coverage_power)
        return score_fuse(lists, {"fts": fts_weight, "vec": s.vec_weight}, depth)
    return rrf_fuse(lists, s.rrf_k, depth)


@dataclass(frozen=True)
class _QueryVector:
    """The query's vector as the stores search it (or the attempt that failed to get one)."""

    vector: NDArray[np.float32] | None = None
    signature: str | None = None
    meta: dict[str, tiers.StoreMeta] = field(default_factory=dict)
    failed: Attempt | None = None


async def _nothing() -> tuple[KeywordRanking | None, Attempt | None]:
    return None, None


def _report(a: Attempt) -> TierReport:
    return TierReport(tier=a.tier, served=a.served, ms=round(a.ms, 3), reason=a.reason or None, hits=a.hits)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
