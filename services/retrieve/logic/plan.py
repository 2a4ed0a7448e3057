"""Pure decisions of a retrieval: which tiers to try, how fallbacks are named, and how the
ranked candidates become the answer (rows joined, limit, token budget).

The engine (``engine.py``) does the I/O and feeds plain values in; every rule here is
unit-testable without NATS or Postgres.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

import msgspec

from memoryd.errors import DependencyDown, MemorydError, ValidationFailed
from memoryd.schemas.retrieval import RetrievedMemory, Tier
from services.retrieve.logic import sessions, temporal
from services.retrieve.logic.fusion import (
    Fused,
    RankedList,
    Strategy,
    apply_budget,
    keyword_query_is_usable,
    neighbour_gains,
    rescored,
    scores_of,
    speaker_gains,
    temporal_gains,
)
from services.retrieve.logic.time_cues import asks_when
from shared.tokens import estimate_tokens

#: Fallback reason codes: the ``reason`` label of ``memoryd_retrieve_fallbacks_total`` and the
#: keys of ``engine.status`` fallbacks. Few and fixed, so the metric stays low-cardinality.
FallbackCode = Literal[
    "empty_query",
    "keyword_unusable",
    "keyword_failed",
    "embed_unavailable",
    "embed_timeout",
    "embed_failed",
    "embed_circuit_open",
    "no_active_signature",
    "signature_mismatch",
    "reindex_in_progress",
    "dimension_mismatch",
    "store_down",
    "store_timeout",
    "store_error",
    "store_circuit_open",
]


@dataclass(frozen=True)
class Plan:
    """What a request runs first. ``recent_only``: nothing to search, answer newest first."""

    strategy: Strategy
    keyword: bool
    vector: bool
    recent_only: bool
    skip_code: FallbackCode | None = None  # why a search tier is skipped up front
    skip_reason: str = ""


def plan(strategy: Strategy, query: str) -> Plan:
    """The tiers to run for ``strategy`` on a normalised ``query``.

    - ``exact``: newest first, the query is not searched;
    - empty query: nothing to search, newest first (said so);
    - ``hybrid``: keyword and vector concurrently; a query with no letter or digit skips
      the keyword side (vector only, said so);
    - ``semantic``: vector first; keyword only as a fallback, and only if usable.
    """
    if strategy is Strategy.EXACT:
        return Plan(strategy, keyword=False, vector=False, recent_only=True)
    if not query:
        return Plan(strategy, False, False, True, "empty_query", "empty query: nothing to search, newest first")
    usable = keyword_query_is_usable(query)
    skip: tuple[FallbackCode | None, str] = (
        (None, "") if usable else ("keyword_unusable", "query has no letter or digit: no words for full-text search")
    )
    if strategy is Strategy.HYBRID:
        return Plan(strategy, keyword=usable, vector=True, recent_only=False, skip_code=skip[0], skip_reason=skip[1])
    return Plan(strategy, keyword=False, vector=True, recent_only=False, skip_code=skip[0], skip_reason=skip[1])


@dataclass(frozen=True)
class Attempt:
    """One tier's part, in the order the tiers were tried."""

    tier: Tier
    served: bool
    ms: float = 0.0
    code: FallbackCode | None = None
    reason: str = ""
    hits: int | None = None


def fallback_labels(attempts: Sequence[Attempt]) -> list[str]:
    """``"<from>-><to>:<code>"`` per failed attempt; ``to`` is the next tier tried after it,
    else the tiers that served (``keyword+pgvector``), else ``none``."""
    served = "+".join(dict.fromkeys(a.tier for a in attempts if a.served)) or "none"
    out: list[str] = []
    for i, attempt in enumerate(attempts):
        if attempt.served or attempt.code is None:
            continue
        later = [a.tier for a in attempts[i + 1 :] if a.tier != attempt.tier]
        out.append(f"{attempt.tier}->{later[0] if later else served}:{attempt.code}")
    return out


# --- ranked lists -> answer ------------------------------------------------------------------
class _Said(msgspec.Struct):
    """What the speaker boost reads of a candidate's metadata (other keys are skipped, not built)."""

    speaker: Any = None


_SAID = msgspec.json.Decoder(_Said | None)  # a JSON null stored by hand reads as no metadata
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = _EPOCH.toordinal()
_DAY_US = 86_400_000_000


# gc=False: only scalars (never in a reference cycle), ~200 per hybrid search: not tracked (see ``Fused``)
class MemoryRow(msgspec.Struct, frozen=True, gc=False):
    """The columns of a winner that the answer shows (fetched in one query; built positionally
    from its record, in this field order)."""

    id: str
    content: str
    memory_type: str
    #: when it was stored: a datetime, or microseconds since the Unix epoch as ``tiers.fetch_rows``
    #: reads it (a timestamp decoded to a datetime costs ~0.75 µs, ~200 rows per hybrid search, and
    #: only the results' and a time question's rows are read as times): read it as ``created``/``day``
    created_at: datetime | int
    session_id: str | None = None
    scope: str = "apiKey"
    metadata_json: str = "{}"  # decoded for the results only (``metadata``), not for every candidate
    agent_id: str | None = None
    turn: int | None = None  # position among its session's chat turns, when asked (``tiers.fetch_rows``)

    @property
    def created(self) -> datetime:
        """``created_at`` as a datetime (UTC when fetched as microseconds)."""
        at = self.created_at
        return at if isinstance(at, datetime) else _EPOCH + timedelta(microseconds=at)

    @property
    def day(self) -> date:
        """The calendar day of ``created`` (for microseconds: without building the datetime)."""
        at = self.created_at
        return at.date() if isinstance(at, datetime) else date.fromordinal(_EPOCH_DAY + at // _DAY_US)

    @property
    def speaker(self) -> str | None:
        """The name the turn was said under (ingest's ``speaker`` metadata), if any."""
        if '"speaker"' not in self.metadata_json:  # most rows: no decode
            return None
        said = _SAID.decode(self.metadata_json)  # the speaker alone: half the cost of the whole dict
        value = None if said is None else said.speaker
        return value if isinstance(value, str) else None

    @property
    def metadata(self) -> dict[str, Any]:
        value: dict[str, Any] | None = msgspec.json.decode(self.metadata_json)
        return value or {}  # a JSON null stored by hand reads as no metadata


def boost(
    ranked: Sequence[Fused],
    rows: Mapping[str, MemoryRow],
    session_share: float,
    neighbour_share: float,
    speaker_share: float = 0.0,
    query: str = "",
    temporal_share: float = 0.0,
    reasoning_share: float = 0.0,
    today: date | None = None,
    session_members: int = 1,
    session_spread: float = 0.0,
    reasoning_lift: float = 0.0,
) -> list[Fused]:
    """Hybrid re-scoring of the fused candidates whose ``rows`` were fetched: ``session_share``
    of the best score in a result's session, then ``neighbour_share`` of its neighbouring
    turns' scores, then ``speaker_share`` of its own score when ``query`` names its speaker,
    then ``temporal_share`` of it when ``query`` asks when and its content says when, then
    ``reasoning_share`` x how well its time answers the time ``query`` asks about
    (``temporal.temporal_gains``, relative to ``today``) (0 turns each off; the engine and the
    quality study both call this). A session's score is the mean of its best ``session_members``
    (``sessions.evidence_gains``); ``session_spread`` > 0 discounts each further result of a session
    (``sessions.spread_scores``); ``reasoning_lift`` scales the reasoning's gains towards the best
    candidate's score (``temporal.scale``)."""
    scores = scores_of(ranked)
    # what the boosts read of the rows, in one pass: sessions and turn positions (rows without
    # either neither gain nor give), speakers (only rows whose metadata names one are decoded)
    session_of: dict[str, str] = {}
    positions: dict[str, tuple[str, int]] = {}
    speakers: dict[str, str | None] = {}
    by_speaker = speaker_share > 0 and bool(query)
    for i, r in rows.items():
        if (session := r.session_id) is not None:
            session_of[i] = session
            if r.turn is not None:
                positions[i] = (session, r.turn)
        if by_speaker and '"speaker"' in r.metadata_json:
            speakers[i] = r.speaker
    if session_share > 0:
        scores = sessions.evidence_gains(scores, session_of, session_share, session_members)
    if positions:
        scores = neighbour_gains(scores, positions, neighbour_share)
    if speakers:  # else no one gains
        scores = speaker_gains(scores, speakers, query, speaker_share)
    if temporal_share > 0 and asks_when(query):  # the contents are read for "when" questions only
        scores = temporal_gains(scores, {i: r.content for i, r in rows.items()}, query, temporal_share)
    day = today or date.today()
    if reasoning_share > 0 and query and temporal.read_question(query, day).temporal:  # else nothing to gain
        moments = {i: (r.content, r.day) for i, r in rows.items()}
        scores = temporal.temporal_gains(scores, moments, query, reasoning_share, day, reasoning_lift)
    boosted = rescored(ranked, scores)  # one sort, whatever the boosts
    if session_spread > 0:
        return rescored(boosted, sessions.spread_scores(boosted, session_of, session_spread))
    return boosted


def single_ranking(ranked: RankedList, source: Literal["fts", "vec"]) -> list[Fused]:
    """One source's list as results scored by its raw score (first occurrence of an id wins)."""
    seen: set[str] = set()
    out: list[Fused] = []
    for memory_id, raw in ranked:
        if memory_id in seen:
            continue
        seen.add(memory_id)
        rank = len(out) + 1
        if source == "fts":
            out.append(Fused(memory_id=memory_id, score=raw, fts_score=raw, fts_rank=rank))
        else:
            out.append(Fused(memory_id=memory_id, score=raw, vec_score=raw, vec_rank=rank))
    return out


def recency_ranking(ids: Sequence[str]) -> list[Fused]:
    """Newest-first ids scored ``1/rank`` (no per-source scores)."""
    return [Fused(memory_id=memory_id, score=1.0 / rank) for rank, memory_id in enumerate(dict.fromkeys(ids), 1)]


def relevant(ranked: Sequence[Fused], threshold: float | None) -> list[Fused]:
    """The candidates that clear a relevance ``threshold`` (None: all of them).

    A candidate is relevant when its vector similarity (cosine, ``vec_score``) reaches the
    threshold, or when the keyword tier matched it (it shares the query's words). A candidate
    with neither (newest-first, an unscored vector) is not: a threshold asks for evidence.
    """
    if threshold is None:
        return list(ranked)
    return [
        f
        for f in ranked
        if f.fts_rank is not None
        or (f.vec_score is not None and math.isfinite(f.vec_score) and f.vec_score >= threshold)
    ]


def tier_of(fused: Fused, vector_tier: Tier, *, recent: bool = False) -> Tier:
    """The tier credited with a result: the source where it ranked better (keyword on a tie)."""
    if recent:
        return "recent"
    if fused.vec_rank is not None and (fused.fts_rank is None or fused.vec_rank < fused.fts_rank):
        return vector_tier
    return "keyword"


def answer(
    ranked: Sequence[Fused],
    rows: Mapping[str, MemoryRow],
    *,
    limit: int,
    max_tokens: int,
    tier: Callable[[Fused], Tier],
    count_tokens: Callable[[str], int] = estimate_tokens,
) -> tuple[list[RetrievedMemory], int]:
    """The results in rank order: candidates whose row is gone are dropped, then ``limit``,
    then the token budget (a prefix; at least one result when anything matched).

    Returns the results and the tokens they use.
    """
    present = [f for f in ranked if f.memory_id in rows][:limit]
    priced = [(f, count_tokens(rows[f.memory_id].content)) for f in present]
    taken = apply_budget(priced, lambda pair: pair[1], max_tokens)
    out = []
    for f, tokens in taken:
        row = rows[f.memory_id]
        out.append(
            RetrievedMemory(
                id=row.id,
                content=row.content,
                memory_type=row.memory_type,  # type: ignore[arg-type]  # checked by the table constraint
                created_at=row.created,
                score=f.score,
                tier=tier(f),
                tokens=tokens,
                session_id=row.session_id,
                agent_id=row.agent_id,
                scope=row.scope,  # type: ignore[arg-type]
                fts_score=f.fts_score,
                vec_score=f.vec_score,
                fts_rank=f.fts_rank,
                vec_rank=f.vec_rank,
                metadata=row.metadata,
            )
        )
    return out, sum(tokens for _f, tokens in taken)


# --- vector store checks ---------------------------------------------------------------------
def store_mismatch(
    active: str | None, pending: str | None, active_dim: int | None, signature: str, dim: int
) -> tuple[FallbackCode, str] | None:
    """Why a store whose ``memory_vec_meta`` says ``active``/``pending``/``active_dim`` cannot be
    searched with a query vector of ``signature`` and ``dim`` (None: it can).

    No active signature recorded yet: None (the store itself says whether it has vectors),
    unless a backfill is pending: a store added to memories embedded before (e.g. Qdrant
    attached at run time) has only part of them until it completes.
    """
    if not active:
        if pending:
            return "reindex_in_progress", f"store is being filled with {pending} (backfill pending)"
        return None
    if active != signature:
        if pending == signature:
            return "reindex_in_progress", f"store searches {active}; query is {signature} (backfill pending)"
        return "signature_mismatch", f"store searches {active}; query embedding is {signature}"
    if active_dim is not None and active_dim != dim:
        return "dimension_mismatch", f"store has {active_dim} dimensions; query vector has {dim}"
    return None


def store_failure(name: str, exc: BaseException, timeout: float) -> tuple[FallbackCode, str]:
    """The fallback code and reason for a store search that raised ``exc``."""
    if isinstance(exc, TimeoutError):
        return "store_timeout", f"{name} did not answer within {timeout} s"
    if isinstance(exc, DependencyDown | ValidationFailed) and "dimension" in exc.description:
        return "dimension_mismatch", f"{name}: {exc.description}"
    if isinstance(exc, DependencyDown):
        return "store_down", f"{name} unavailable: {exc.description}"
    if isinstance(exc, MemorydError):
        return "store_error", f"{name}: {exc.description}"
    return "store_error", f"{name} failed: {type(exc).__name__}"
