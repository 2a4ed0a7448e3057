"""Pure retrieval logic (no I/O): rank fusion, optional re-scoring, token budget, queries.

Ranked lists come best first, one per source: ``"fts"`` (the keyword tier's BM25 or
``ts_rank_cd``) and ``"vec"`` (similarity, higher is better: ``1 - distance``). Everything
returning ``Fused`` sorts in one canonical order: score descending, then the better (smaller)
best rank, then ``memory_id``.
"""

from __future__ import annotations

import enum
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from services.retrieve.logic.time_cues import asks_when, says_when

T = TypeVar("T")

SOURCES: tuple[str, ...] = ("fts", "vec")  # any other list name is rejected: typos fail loudly
RankedList = Sequence[tuple[str, float]]  # (memory_id, raw score) in rank order, best first

DEFAULT_RRF_K = 60
DEFAULT_RRF_DEPTH = 20
MAX_QUERY_CHARS = 2000


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A memory row that matched, with the per-source ranking info it was found with."""

    memory_id: str
    content: str
    created_at: datetime
    session_id: str | None = None
    fts_score: float | None = None
    vec_score: float | None = None
    fts_rank: int | None = None
    vec_rank: int | None = None


# gc=False: ~200 per hybrid search, holding only scalars (never in a reference cycle), so the
# garbage collector need not track them (measured with MemoryRow: one young collection per
# search before, none after, searching one at a time).
class Fused(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One fused result: the fused ``score`` plus raw score and 1-based rank per source."""

    memory_id: str
    score: float
    fts_score: float | None = None
    vec_score: float | None = None
    fts_rank: int | None = None
    vec_rank: int | None = None

    @property
    def best_rank(self) -> int:
        """The smallest rank over the sources that returned this memory (a sort key: kept cheap)."""
        fts, vec = self.fts_rank, self.vec_rank
        if fts is None:
            return _UNRANKED if vec is None else vec
        return fts if vec is None or fts < vec else vec


_UNRANKED = 2**31
Bounds = Mapping[str, tuple[float, float]]  # source -> (min, max) of its finite raw scores


def _canonical(items: Iterable[Fused]) -> list[Fused]:
    keyed = []
    for f in items:  # ``best_rank`` inlined: no property call per candidate
        fts, vec = f.fts_rank, f.vec_rank
        best = (_UNRANKED if vec is None else vec) if fts is None else fts if vec is None or fts < vec else vec
        keyed.append(((-f.score, best, f.memory_id), f))
    keyed.sort(key=_first)  # the keys built in one pass: no key function called per comparison
    return [f for _key, f in keyed]


_first = operator.itemgetter(0)
#: Where a source's (1-based rank, raw score) sit in a memory's hit: [fts rank, fts raw, vec rank, vec raw].
_SLOT = {"fts": 0, "vec": 2}
Hit = list[Any]  # one memory's [fts rank, fts raw, vec rank, vec raw], None where a source did not list it


def _fuse(
    lists: Mapping[str, RankedList], depth: int | None, scorer: Callable[[Bounds], Callable[[Hit], float]]
) -> list[Fused]:
    """Collect the top ``depth`` of each list per memory, score each memory with
    ``scorer(bounds)``, sort.

    A memory listed twice in one list keeps its first (best) position; ranks count distinct ids.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    limit = math.inf if depth is None else depth
    found: dict[str, Hit] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for source, ranked in lists.items():
        slot = _SLOT.get(source)
        if slot is None:
            raise ValueError(f"unknown ranking source {source!r}; allowed: {', '.join(SOURCES)}")
        rank, lo, hi = 0, math.inf, -math.inf
        for memory_id, raw in ranked:
            if rank >= limit:
                break
            hit = found.get(memory_id)
            if hit is None:
                hit = found[memory_id] = [None, None, None, None]
            elif hit[slot] is not None:
                continue
            rank += 1
            hit[slot] = rank
            hit[slot + 1] = raw
            if math.isfinite(raw):
                lo = raw if raw < lo else lo
                hi = raw if raw > hi else hi
        if lo <= hi:  # a finite score was seen
            bounds[source] = (lo, hi)
    score_of = scorer(bounds)
    return _canonical(
        [
            Fused(memory_id=i, score=score_of(h), fts_rank=h[0], fts_score=h[1], vec_rank=h[2], vec_score=h[3])
            for i, h in found.items()
        ]
    )


def rrf_fuse(lists: Mapping[str, RankedList], k: int = DEFAULT_RRF_K, depth: int = DEFAULT_RRF_DEPTH) -> list[Fused]:
    """Reciprocal Rank Fusion: ``score(d) = sum_i 1 / (k + rank_i(d))``, rank 1-based.

    Only the top ``depth`` of each list takes part (depth 20 beat 100 on LoCoMo). Terms are
    summed with ``math.fsum`` so equal rank sets give bit-equal scores; ties then fall to the
    canonical order (better best rank, then ``memory_id``). Raw scores are carried, not used.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")

    def score(hit: Hit) -> float:  # math.fsum of at most two terms: their plain sum (see ``_sum2``)
        fts, vec = hit[0], hit[2]
        if fts is None:
            return 0.0 if vec is None else 1.0 / (k + vec)
        return 1.0 / (k + fts) if vec is None else 1.0 / (k + fts) + 1.0 / (k + vec)

    return _fuse(lists, depth, lambda _bounds: score)


def _minmax(raw: float, lo: float, hi: float) -> float:
    return 0.0 if not math.isfinite(raw) else 1.0 if hi == lo else (raw - lo) / (hi - lo)


def _minmax_similarity(raw: float, lo: float, hi: float) -> float:
    """``_minmax`` for a similarity in -1..1 (the vector tier's cosine), except that a list whose
    scores are all equal (one hit, typically) keeps its own similarity clamped to 0..1: such a list
    ranks nothing, and a full 1.0 would let one unrelated vector hit tie a keyword match."""
    if hi == lo and math.isfinite(raw):
        return min(1.0, max(0.0, raw))
    return _minmax(raw, lo, hi)


def _sum2(a: float, b: float) -> float:
    """``math.fsum((a, b))`` without the call: the sum of two floats is already correctly rounded,
    and adding to 0.0 first turns a -0.0 into 0.0 as ``fsum`` does."""
    return 0.0 + a + b


def score_fuse(
    lists: Mapping[str, RankedList],
    weights: Mapping[str, float] | None = None,
    depth: int | None = None,
) -> list[Fused]:
    """Score-level fusion: ``sum_i w_i * minmax_i(score)`` over the union of candidates.

    Each list is min-max normalised over its own top ``depth`` (None: the whole list) to
    0..1; a memory missing from a list, or with a non-finite score (NaN from a zero vector),
    counts 0 for it; a keyword list whose finite scores are all equal normalises them to 1.0, a
    vector list keeps their similarity (clamped to 0..1: ``_minmax_similarity``).
    ``weights`` default to 0.5/0.5 and must name every source given. Scores must be
    "higher is better". Output order and tie-break as for ``rrf_fuse``.
    """
    weights = {"fts": 0.5, "vec": 0.5} if weights is None else weights
    for source, weight in weights.items():
        if source not in SOURCES:
            raise ValueError(f"unknown weight source {source!r}; allowed: {', '.join(SOURCES)}")
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight for {source!r} must be finite and >= 0, got {weight}")
    missing = [s for s in lists if s not in weights and s in SOURCES]
    if missing:
        raise ValueError(f"no weight for ranking source(s): {', '.join(missing)}")
    fts_weight, vec_weight = weights.get("fts", 0.0), weights.get("vec", 0.0)

    def scorer(bounds: Bounds) -> Callable[[Hit], float]:
        (fts_lo, fts_hi), (vec_lo, vec_hi) = bounds.get("fts", (0.0, 0.0)), bounds.get("vec", (0.0, 0.0))

        def score(hit: Hit) -> float:
            fts = 0.0 if hit[0] is None else fts_weight * _minmax(hit[1], fts_lo, fts_hi)
            if hit[2] is None:
                return fts + 0.0  # as fsum: never -0.0
            return _sum2(fts, vec_weight * _minmax_similarity(hit[3], vec_lo, vec_hi))

        return score

    return _fuse(lists, depth, scorer)


Scores = dict[str, float]  # memory_id -> score, the working state of the boosts


def _check_share(share: float) -> None:
    if not (math.isfinite(share) and share >= 0):
        raise ValueError(f"share must be finite and >= 0, got {share}")


def _gained(scores: Scores, share: float, gains: Callable[[], Iterable[tuple[str, float]]]) -> Scores:
    """``scores`` with ``share * gain`` added for each ``(id, gain)`` of ``gains()`` (only the
    memories that can gain; called once ``share`` is checked: a share of 0 computes none).
    The gains are computed from ``scores`` before any is added, so input order does not matter."""
    _check_share(share)
    if share == 0:
        return scores
    out = dict(scores)
    for memory_id, gain in gains():
        if added := share * gain:
            out[memory_id] += added
    return out


def rescored(fused: Sequence[Fused], scores: Mapping[str, float]) -> list[Fused]:
    """``fused`` with the scores of ``scores`` (the result of the boosts), in canonical order."""
    out = [
        f if (score := scores.get(f.memory_id, f.score)) == f.score else msgspec.structs.replace(f, score=score)
        for f in fused
    ]
    return _canonical(out)


def scores_of(fused: Sequence[Fused]) -> Scores:
    """The fused scores as the boosts' working state (the first occurrence of an id counts)."""
    out: Scores = {}
    for f in fused:
        out.setdefault(f.memory_id, f.score)
    return out


def session_gains(scores: Scores, session_of: Mapping[str, str | None], share: float = 0.0) -> Scores:
    """Each memory gains ``share`` x the best score in its session (itself included).

    Evidence clusters in sessions (LoCoMo lead: ~+0.035 R@10). Memories without a session
    (None or not in ``session_of``) neither gain nor give.
    """

    def gains() -> Iterable[tuple[str, float]]:
        best: dict[str, float] = {}
        members, sessions = [], []
        for memory_id, score in scores.items():
            if (session := session_of.get(memory_id)) is not None:
                top = best.get(session, -math.inf)
                best[session] = score if score > top else top  # max(top, score), without the call
                members.append(memory_id)
                sessions.append(session)
        return zip(members, map(best.__getitem__, sessions), strict=True)

    return _gained(scores, share, gains)


def session_boost(fused: Sequence[Fused], session_of: Mapping[str, str | None], share: float = 0.0) -> list[Fused]:
    """``session_gains`` over fused results, in canonical order (``share=0``: only re-sorts)."""
    return rescored(fused, session_gains(scores_of(fused), session_of, share))


#: the neighbour boost's weight per turn distance (±1 at 1.0, ±2 at 0.5)
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (1.0, 0.5)
#: how far apart two chat turns of a session the boost tells apart: ``tiers.fetch_rows`` numbers
#: the candidates so that differences of their positions are exact up to this and larger beyond
MAX_DISTANCE = len(NEIGHBOUR_WEIGHTS)


def neighbour_gains(
    scores: Scores,
    position_of: Mapping[str, tuple[str, int]],
    share: float = 0.0,
    distance_weights: Sequence[float] = NEIGHBOUR_WEIGHTS,
) -> Scores:
    """Each memory gains ``share`` x the weighted scores of its neighbouring turns.

    ``position_of`` maps a memory to ``(session_id, turn index)``; the neighbours at distance
    d (both sides, same session) weigh ``distance_weights[d-1]``, so the default reaches ±1
    at 1.0 and ±2 at 0.5. Only candidates count (a neighbour that did not match adds 0).
    """

    def gains() -> Iterator[tuple[str, float]]:
        at: dict[str, dict[int, float]] = {}  # session -> turn index -> best score there
        placed = []
        for memory_id, score in scores.items():
            if (pos := position_of.get(memory_id)) is not None:
                session, index = pos
                if (turns := at.get(session)) is None:
                    turns = at[session] = {}
                top = turns.get(index, -math.inf)
                turns[index] = score if score > top else top
                placed.append((memory_id, turns, index))
        if len(distance_weights) == 2:  # the default: fsum of two terms is their plain sum (``_sum2``)
            near, far = distance_weights
            for memory_id, turns, index in placed:
                get = turns.get
                yield (
                    memory_id,
                    _sum2(
                        near * (get(index - 1, 0.0) + get(index + 1, 0.0)),
                        far * (get(index - 2, 0.0) + get(index + 2, 0.0)),
                    ),
                )
            return
        weights = list(enumerate(distance_weights, start=1))
        for memory_id, turns, index in placed:
            yield (
                memory_id,
                math.fsum([w * (turns.get(index - d, 0.0) + turns.get(index + d, 0.0)) for d, w in weights]),
            )

    return _gained(scores, share, gains)


def neighbour_boost(
    fused: Sequence[Fused],
    position_of: Mapping[str, tuple[str, int]],
    share: float = 0.0,
    distance_weights: Sequence[float] = NEIGHBOUR_WEIGHTS,
) -> list[Fused]:
    """``neighbour_gains`` over fused results, in canonical order (``share=0``: only re-sorts)."""
    return rescored(fused, neighbour_gains(scores_of(fused), position_of, share, distance_weights))


_QUERY_WORD = re.compile(r"\w+")


def query_words(query: str) -> frozenset[str]:
    """The casefolded words of a question (``"Caroline's"`` gives ``caroline`` and ``s``)."""
    return frozenset(_QUERY_WORD.findall(query.casefold()))


def speaker_gains(scores: Scores, speaker_of: Mapping[str, str | None], query: str, share: float = 0.0) -> Scores:
    """A memory whose speaker the question names gains ``share`` x its own score.

    ``speaker_of`` maps a memory to the name its turn was said under (the chat message's
    ``name``); a name counts as named when every word of it is a word of the question,
    casefolded. Memories without a speaker neither gain nor lose.
    """

    def gains() -> Iterator[tuple[str, float]]:
        words = query_words(query)
        named: dict[str, bool] = {}
        for memory_id, score in scores.items():
            if speaker := speaker_of.get(memory_id):
                if speaker not in named:
                    parts = query_words(speaker)
                    named[speaker] = bool(parts) and parts <= words
                if named[speaker]:
                    yield memory_id, score

    return _gained(scores, share, gains)


def speaker_boost(
    fused: Sequence[Fused], speaker_of: Mapping[str, str | None], query: str, share: float = 0.0
) -> list[Fused]:
    """``speaker_gains`` over fused results, in canonical order (``share=0``: only re-sorts)."""
    return rescored(fused, speaker_gains(scores_of(fused), speaker_of, query, share))


def temporal_gains(scores: Scores, text_of: Mapping[str, str], query: str, share: float = 0.0) -> Scores:
    """When the question asks when (``time_cues.asks_when``), a memory whose text says when
    (``time_cues.says_when``) gains ``share`` x its own score; other questions change nothing.
    Memories without a text in ``text_of`` neither gain nor lose."""

    def gains() -> Iterator[tuple[str, float]]:
        if not asks_when(query):
            return
        for memory_id, score in scores.items():
            if (text := text_of.get(memory_id)) is not None and says_when(text):
                yield memory_id, score

    return _gained(scores, share, gains)


def apply_budget(items: Sequence[T], tokens_of: Callable[[T], int], max_tokens: int) -> list[T]:
    """Take items in rank order while the running total fits in ``max_tokens``.

    Stops at the first item that does not fit (a smaller item after it is not taken, so the
    result is always a prefix of the ranking). The first item is always returned when there
    is one, even if it alone exceeds the budget, unless the budget is 0 (nothing is taken).
    ``tokens_of`` is called once per item examined; pass precomputed counts (e.g.
    ``(item, tokens)`` pairs) to avoid recounting.
    """
    taken: list[T] = []
    if max_tokens <= 0:
        return taken
    used = 0
    for item in items:
        tokens = tokens_of(item)
        if tokens < 0:
            raise ValueError(f"tokens_of returned a negative count: {tokens}")
        if taken and used + tokens > max_tokens:
            break
        taken.append(item)
        used += tokens
    return taken


def budget_tokens(requested: int | None, owner_cap: int) -> int:
    """The token budget of one retrieval: the owner's ``maxTokens`` caps what a request asks for
    (None asks for the cap). The schemas bound both to ``MAX_TOKENS_LIMIT``."""
    return owner_cap if requested is None else max(0, min(requested, owner_cap))


# Runs of characters that are neither whitespace nor C0/C1 controls nor lone surrogates
# (Postgres rejects NUL; asyncpg cannot encode a surrogate). Those act as separators.
_WORD = re.compile(r"[^\s\x00-\x1f\x7f-\x9f\ud800-\udfff]+")


def normalize_query(query: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    """Strip, collapse whitespace and control characters to one space, cut to ``max_chars``.

    Returns "" for a query of only whitespace/controls. The cut is a plain prefix (it may
    split the last word) followed by a right-strip, so it is deterministic. Cost stays
    proportional to ``max_chars``, not to the input size, once enough words are read.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    words: list[str] = []
    length = 0
    for match in _WORD.finditer(query):
        words.append(match.group())
        length += len(words[-1]) + 1
        if length > max_chars:
            break
    return " ".join(words)[:max_chars].rstrip()


def keyword_query_is_usable(query: str) -> bool:
    """False when the query has no letter or digit (only punctuation, symbols, emoji).

    The caller then skips full-text search instead of sending Postgres a query with no
    lexemes; the vector side can still run.
    """
    return any(ch.isalnum() for ch in query)


class Strategy(enum.StrEnum):
    """Retrieval strategies; ``exact`` is chronological, newest first."""

    EXACT = "exact"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


STRATEGY_ALIASES: Mapping[str, Strategy] = {"recent": Strategy.EXACT}
DEFAULT_STRATEGY = Strategy.HYBRID


def parse_strategy(value: str | None) -> Strategy:
    """Parse a strategy name (case-insensitive, ``recent`` = ``exact``); None gives hybrid."""
    if value is None:
        return DEFAULT_STRATEGY
    name = value.strip().lower()
    if name in STRATEGY_ALIASES:
        return STRATEGY_ALIASES[name]
    try:
        return Strategy(name)
    except ValueError:
        allowed = ", ".join([*(s.value for s in Strategy), *STRATEGY_ALIASES])
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise ValueError(f"strategy: unknown value {shown!r}; allowed: {allowed}") from None
