"""The in-process retrieval study: every question's candidates read once, then re-ranked for
any setting without a round trip.

``collect`` runs, per LoCoMo question, the same adapters the retrieve engine runs for hybrid
(``Engine.keyword_ranking`` with its pruning, once per keyword scoring, ``vector_search`` on
pgvector with the query vector of the embed service, ``fetch_rows`` with the turn positions) at the deepest
``rrfDepth`` of the sweep. ``rank`` then applies the engine's own steps (``engine.fuse_lists``:
score or rank fusion over the top ``rrfDepth`` of each list, ``plan.boost``, the visibility
filter and the limit) for one ``Params``: each list truncated to a depth is exactly what the
tier returns when asked for that depth, so a ranking here is the service's ranking for the
same settings (the quality benchmark prints both for the defaults as a check).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

import msgspec

from bench import locomo
from bench.floor import in_process_engine
from services.retrieve.adapters import postgres as tiers
from services.retrieve.engine import fuse_lists
from services.retrieve.logic import time_window
from services.retrieve.logic.bm25 import KEYWORD_SCORINGS, KeywordRanking, KeywordScoring
from services.retrieve.logic.fusion import Fused, RankedList, normalize_query
from services.retrieve.logic.plan import MemoryRow, boost
from shared.settings.memory import MemorySettings

LIMIT = 20
#: the keyword matches collected per question for the time-window candidates (every one, in practice)
MATCHES = 100_000


@dataclass(frozen=True)
class Params:
    """One point of the sweep: the hybrid settings that change a ranking."""

    fusion: str = "score"
    rrf_k: int = 60
    depth: int = 50
    fts_weight: float = 0.5
    vec_weight: float = 0.5
    session_boost: float = 0.3
    neighbour_boost: float = 0.3
    speaker_boost: float = 0.0
    fts_full_coverage: float = 0.0
    fts_coverage_power: float = 4.0
    keyword_ranking: KeywordScoring = "bm25"
    temporal_boost: float = 0.0
    temporal_reasoning: float = 0.0
    session_evidence: int = 1
    session_spread: float = 0.0
    temporal_lift: float = 0.0
    temporal_window: int = 0

    def label(self) -> str:
        if self.fusion == "rrf":
            head = f"rrf k={self.rrf_k} depth={self.depth}"
        else:
            head = f"score depth={self.depth} fts={self.fts_weight:g} vec={self.vec_weight:g}"
            if self.fts_full_coverage > 0:
                head += f" coverage={self.fts_full_coverage:g}^{self.fts_coverage_power:g}"
        return (
            f"{self.keyword_ranking} {head} session={self.session_boost:g} neighbour={self.neighbour_boost:g}"
            f" speaker={self.speaker_boost:g} temporal={self.temporal_boost:g}"
            + (f" reasoning={self.temporal_reasoning:g}" if self.temporal_reasoning else "")
            + (f" evidence={self.session_evidence}" if self.session_evidence != 1 else "")
            + (f" spread={self.session_spread:g}" if self.session_spread else "")
            + (f" lift={self.temporal_lift:g}" if self.temporal_lift else "")
            + (f" window={self.temporal_window}" if self.temporal_window else "")
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def defaults(s: MemorySettings | None = None) -> Params:
    """The hybrid settings of ``s`` (the shipped defaults when None) as a ``Params``."""
    s = s or MemorySettings()
    return Params(
        s.fusion,
        s.rrf_k,
        s.rrf_depth,
        s.fts_weight,
        s.vec_weight,
        s.session_boost,
        s.neighbour_boost,
        s.speaker_boost,
        s.fts_full_coverage,
        s.fts_coverage_power,
        s.keyword_ranking,
        s.temporal_boost,
        s.temporal_reasoning,
        s.session_evidence,
        s.session_spread,
        s.temporal_lift,
        s.temporal_window,
    )


@functools.cache
def settings(p: Params) -> MemorySettings:
    """The runtime settings ``p`` stands for (the rest at their defaults), for the engine's own fusion."""
    return msgspec.structs.replace(
        MemorySettings(),
        fusion=p.fusion,
        rrf_k=p.rrf_k,
        rrf_depth=p.depth,
        fts_weight=p.fts_weight,
        vec_weight=p.vec_weight,
        session_boost=p.session_boost,
        neighbour_boost=p.neighbour_boost,
        speaker_boost=p.speaker_boost,
        fts_full_coverage=p.fts_full_coverage,
        fts_coverage_power=p.fts_coverage_power,
        keyword_ranking=p.keyword_ranking,
        temporal_boost=p.temporal_boost,
        temporal_reasoning=p.temporal_reasoning,
        session_evidence=p.session_evidence,
        session_spread=p.session_spread,
        temporal_lift=p.temporal_lift,
        temporal_window=p.temporal_window,
    )


@dataclass(frozen=True)
class Candidates:
    """What the tiers returned for one question at the deepest depth, and the rows to join
    (``keyword``: the keyword tier's answer by scoring, ``bm25`` and ``cover_density``)."""

    conversation: str
    qa: locomo.QA
    keyword: Mapping[str, KeywordRanking]
    vec: tuple[tuple[str, float], ...]
    rows: Mapping[str, MemoryRow]
    dia: Mapping[str, str]  # memory id -> LoCoMo dia_id (turn memories only)
    #: every BM25 keyword match of the question, best first (the time-window candidates are drawn from it)
    matches: tuple[tuple[str, float], ...] = ()
    #: the owner's every row (turn positions among all its turns) and dia_ids: the window candidates' rows
    owner_rows: Mapping[str, MemoryRow] = field(default_factory=dict)
    owner_dia: Mapping[str, str] = field(default_factory=dict)


def rank(c: Candidates, p: Params) -> tuple[str | None, ...]:
    """The top ``LIMIT`` dia_ids (None: not a turn) the engine returns for ``p``."""
    keyword = c.keyword[p.keyword_ranking]
    lists: dict[str, RankedList] = {"fts": keyword.ranked[: p.depth], "vec": c.vec[: p.depth]}
    query = normalize_query(c.qa.question)
    fused = fuse_lists(lists, settings(p), query, keyword.cover)
    rows = {f.memory_id: c.rows[f.memory_id] for f in fused if f.memory_id in c.rows}
    dia = c.dia
    if p.temporal_window > 0 and p.temporal_reasoning > 0 and p.keyword_ranking == "bm25":
        fused, rows, dia = _window(c, p, query, lists, fused, rows, keyword.cover)
    ranked = boost(
        fused,
        rows,
        p.session_boost,
        p.neighbour_boost,
        p.speaker_boost,
        query,
        p.temporal_boost,
        p.temporal_reasoning,
        session_members=p.session_evidence,
        session_spread=p.session_spread,
        reasoning_lift=p.temporal_lift,
    )
    present = [f.memory_id for f in ranked if f.memory_id in rows][:LIMIT]
    return tuple(dia.get(i) for i in present)


def _window(
    c: Candidates,
    p: Params,
    query: str,
    lists: dict[str, RankedList],
    fused: list[Fused],
    rows: dict[str, MemoryRow],
    cover: float,
) -> tuple[list[Fused], dict[str, MemoryRow], Mapping[str, str]]:
    """``Engine._window`` on the collected candidates: the keyword matches stored within the asked
    time (``c.matches``, read against the owner's rows) beyond the fused candidates, fused again."""
    ranges = time_window.asked_ranges(query, date.today(), fused, rows)
    if not ranges:
        return fused, rows, c.dia
    owner = c.owner_rows
    within = [(i, s) for i, s in c.matches if i in owner and time_window.stored_within(owner[i].created_at, ranges)]
    picks = time_window.extra(within, {f.memory_id for f in fused}, p.temporal_window)
    if not picks:
        return fused, rows, c.dia
    fused = fuse_lists(time_window.window_lists(lists, p.depth, picks), settings(p), query, cover, p.depth + len(picks))
    return fused, {f.memory_id: owner[f.memory_id] for f in fused if f.memory_id in owner}, c.owner_dia


def outcomes(cands: Sequence[Candidates], p: Params) -> list[locomo.QAOutcome]:
    return [locomo.QAOutcome(c.qa.category, c.qa.evidence, rank(c, p)) for c in cands]


#: conversation -> its questions' outcomes
Outcomes = dict[str, list[locomo.QAOutcome]]


def by_conversation(cands: Sequence[Candidates], outs: Sequence[locomo.QAOutcome]) -> Outcomes:
    """``outs`` (one per candidate, in order) grouped by the candidates' conversations."""
    out: Outcomes = {}
    for c, o in zip(cands, outs, strict=True):
        out.setdefault(c.conversation, []).append(o)
    return out


async def collect(
    dsn: str,
    nc: Any,
    convs: Sequence[locomo.Conversation],
    owner_of: Any,
    dia_of_event: Mapping[str, str],
    depth: int,
) -> list[Candidates]:
    """Every question's keyword and vector lists (``depth`` each) and their rows, in-process."""
    queries = {normalize_query(qa.question) for conv in convs for qa in conv.qas}
    vectors: dict[str, list[float]] = {}
    signature = ""
    for q in sorted(queries):
        result = await tiers.embed_query(nc, q, 30.0)
        vectors[q] = list(result.vectors[0])
        signature = result.signature
    out: list[Candidates] = []
    async with in_process_engine(dsn, nc, signature, vectors) as engine:
        store = engine.stores[0]
        for conv in convs:
            owner = owner_of(conv)
            settings = await engine.settings(owner)
            vis = tiers.Visibility(owner, None, None, settings.retention_days)
            found_ids = await engine.pool.fetch("SELECT id FROM memories WHERE owner = $1", owner)
            every_id = [str(r["id"]) for r in found_ids]
            owner_rows = await tiers.fetch_rows(engine.pool, vis, every_id, turns=True)
            owner_dia = {i: d for i, row in owner_rows.items() if (d := _dia(row, dia_of_event)) is not None}
            for qa in conv.qas:
                q = normalize_query(qa.question)
                keyword: dict[str, KeywordRanking] = {
                    s: await engine.keyword_ranking(vis, q, depth, settings, s) for s in KEYWORD_SCORINGS
                }
                vec = await tiers.vector_search(store, signature, vis, vectors[q], depth)
                every = await engine.keyword_ranking(vis, q, MATCHES, settings, "bm25")
                found = [i for k in keyword.values() for i, _ in k.ranked]
                ids = list(dict.fromkeys(found + [i for i, _ in vec]))
                rows = await tiers.fetch_rows(engine.pool, vis, ids, turns=True)
                dia = {}
                for i, row in rows.items():
                    d = _dia(row, dia_of_event)
                    if d is not None:
                        dia[i] = d
                out.append(
                    Candidates(
                        conv.sample_id, qa, keyword, tuple(vec), rows, dia, tuple(every.ranked), owner_rows, owner_dia
                    )
                )
    return out


def _dia(row: MemoryRow, by_event: Mapping[str, str]) -> str | None:
    meta = row.metadata
    if isinstance(meta.get("dia_id"), str):
        return str(meta["dia_id"])
    event = meta.get("event_id")
    return by_event.get(event) if isinstance(event, str) else None
