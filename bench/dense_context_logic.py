"""The dense-context study's pure part: memory texts, vector configurations, scores and folds.

A *text kind* (``TEXTS``) says what is embedded for a chat turn: the turn as stored (``plain``),
without its ``"[<date>] <speaker>: "`` prefix (``raw``), or joined with its neighbouring turns of
the session (``prev1``, ``next1``, ``win1``); other memories embed their content. A
*configuration* (``configurations``) says what the dense tier searches: one vector of one kind
(``text:<kind>``), a normalised mean of plain and context (``mean:<kind>:<a>``), or both kept, the
better cosine counting (``max:<kind>``). Each is scored dense-only and hybrid (``study.rank``, the
engine's fusion) over ``grid()``, leave-one-conversation-out (``folds.evaluate``), so a parameter
is chosen on four conversations and scored on the fifth. No randomness.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import folds, locomo, study
from bench.report import markdown_table
from services.retrieve.logic.fusion import normalize_query

DEPTH = 100  # the vector list's depth (the defaults' rrfDepth, protocol.MAX_DEPTH)
CHAT_TURN = "chat_turn"
#: text kind -> (previous turns, next turns, keep the date/speaker prefix)
TEXTS: dict[str, tuple[int, int, bool]] = {
    "plain": (0, 0, True),
    "raw": (0, 0, False),
    "prev1": (1, 0, True),
    "next1": (0, 1, True),
    "win1": (1, 1, True),
}
CONTEXT_KINDS = ("prev1", "next1", "win1")
#: the context texts mixed with (or kept next to) the plain vector
MIXED_KINDS = CONTEXT_KINDS
MEAN_SHARES = (0.25, 0.5, 0.75)
_PREFIX = re.compile(r"^\[[^\]]*\] [^:\n]{1,80}: ")

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Memory:
    """One stored memory of an owner, in time order within its owner's list."""

    id: str
    source: str
    session_id: str | None
    content: str


@dataclass(frozen=True)
class Config:
    """What the dense tier searches: ``how`` in text|mean|max, over ``kind`` (and ``share``)."""

    how: str
    kind: str
    share: float = 0.0

    @property
    def name(self) -> str:
        if self.how == "text":
            return f"text:{self.kind}"
        if self.how == "mean":
            return f"mean:{self.kind}:{self.share:g}"
        return f"max:{self.kind}"

    @property
    def family(self) -> str:
        if self.how == "text":
            return "text:context" if self.kind in CONTEXT_KINDS else self.name
        return f"{self.how}:*"


def configurations() -> list[Config]:
    """``text:plain`` first (today), then every text kind, mean and max configuration."""
    out = [Config("text", k) for k in TEXTS]
    out += [Config("mean", k, a) for k in MIXED_KINDS for a in MEAN_SHARES]
    out += [Config("max", k) for k in MIXED_KINDS]
    return out


def grid() -> list[study.Params]:
    """The defaults, then each with the full-text weight 0.1 lower or higher, or the neighbour
    share 0.5 (the one setting most folds of the quality protocol moved)."""
    d = study.defaults()
    points = [d]
    for p in (
        replace(d, fts_weight=round(d.fts_weight - 0.1, 2), vec_weight=round(d.vec_weight + 0.1, 2)),
        replace(d, fts_weight=round(d.fts_weight + 0.1, 2), vec_weight=round(d.vec_weight - 0.1, 2)),
        replace(d, neighbour_boost=0.5),
    ):
        if p not in points:
            points.append(p)
    return points


# --- texts -----------------------------------------------------------------------------------
def strip_prefix(content: str) -> str:
    """The turn without its leading ``"[<date>] <speaker>: "`` (unchanged when it has none)."""
    return _PREFIX.sub("", content, count=1)


def memory_texts(memories: Mapping[str, Sequence[Memory]]) -> dict[str, dict[str, str]]:
    """``{memory_id: {text kind: text}}`` over every owner's memories."""
    out: dict[str, dict[str, str]] = {}
    for mems in memories.values():
        sessions: dict[str, list[Memory]] = {}
        for m in mems:
            if m.source == CHAT_TURN and m.session_id is not None:
                sessions.setdefault(m.session_id, []).append(m)
        place = {m.id: (s, i) for s, turns in sessions.items() for i, m in enumerate(turns)}
        for m in mems:
            kinds: dict[str, str] = {}
            for kind, (before, after, prefix) in TEXTS.items():
                if m.id not in place:
                    kinds[kind] = m.content
                    continue
                s, i = place[m.id]
                window = sessions[s][max(0, i - before) : i + after + 1]
                text = "\n".join(t.content for t in window)
                kinds[kind] = text if prefix else strip_prefix(text)
            out[m.id] = kinds
    return out


# --- vectors and rankings --------------------------------------------------------------------
def normalized(m: Matrix) -> Matrix:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.maximum(norms, 1e-12)).astype(np.float32)


def matrices(
    config: Config, ids: Sequence[str], texts: Mapping[str, Mapping[str, str]], vectors: Mapping[str, Any]
) -> list[Matrix]:
    """The vectors one owner's memories have under ``config`` (two matrices for ``max``)."""

    def of(kind: str) -> Matrix:
        return np.vstack([vectors[texts[i][kind]] for i in ids]).astype(np.float32)

    if config.how == "text":
        return [of(config.kind)]
    if config.how == "mean":
        return [normalized(config.share * of("plain") + (1 - config.share) * of(config.kind))]
    return [of("plain"), of(config.kind)]


def dense_list(mats: Sequence[Matrix], ids: Sequence[str], query: Matrix, depth: int) -> tuple[tuple[str, float], ...]:
    """The top ``depth`` memories by cosine (the best of a memory's vectors), best first."""
    scores = np.max(np.vstack([m @ query for m in mats]), axis=0)
    top = np.argsort(-scores, kind="stable")[:depth]
    return tuple((ids[i], float(scores[i])) for i in top)


# --- evaluation ------------------------------------------------------------------------------
def evaluate(
    cands: Sequence[study.Candidates],
    memories: Mapping[str, Sequence[Memory]],
    texts: Mapping[str, Mapping[str, str]],
    vectors: Mapping[str, Any],
    query_vectors: Mapping[str, Any],
    *,
    configs: Sequence[Config] | None = None,
    points: Sequence[study.Params] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every configuration dense-only and hybrid (defaults, in-sample, folds), then the families."""
    configs = list(configs) if configs is not None else configurations()
    points = list(points) if points is not None else grid()
    hybrid: dict[str, dict[int, study.Outcomes]] = {}
    rows: dict[str, Any] = {}
    ids = {conv: [m.id for m in mems] for conv, mems in memories.items()}
    for config in configs:
        started = time.perf_counter()
        mats = {conv: matrices(config, owner_ids, texts, vectors) for conv, owner_ids in ids.items()}
        swapped = []
        for c in cands:
            q = np.asarray(query_vectors[normalize_query(c.qa.question)], dtype=np.float32)
            swapped.append(replace(c, vec=dense_list(mats[c.conversation], ids[c.conversation], q, DEPTH)))
        dense = [
            locomo.QAOutcome(c.qa.category, c.qa.evidence, tuple(c.dia.get(i) for i, _ in c.vec[: study.LIMIT]))
            for c in swapped
        ]
        outcomes = {n: study.by_conversation(swapped, study.outcomes(swapped, p)) for n, p in enumerate(points)}
        hybrid[config.name] = outcomes
        result = folds.evaluate(points, outcomes)
        rows[config.name] = {
            "family": config.family,
            "dense_only": _scores(dense),
            "hybrid_defaults": _scores([o for outs in outcomes[0].values() for o in outs]),
            "hybrid_protocol": folds.summary(result, study.Params.label),
        }
        log(
            f"{config.name:>16}: dense R@10 {rows[config.name]['dense_only']['overall']['R@10']:.3f}"
            f" hybrid defaults {rows[config.name]['hybrid_defaults']['overall']['R@10']:.3f}"
            f" held-out {result.held_out_mean():.4f} ({time.perf_counter() - started:.0f} s)"
        )
    families: dict[str, Any] = {}
    for family in dict.fromkeys(c.family for c in configs):
        members = [c for c in configs if c.family == family]
        if len(members) < 2:
            continue
        fam_points = [(c.name, p) for c in members for p in points]
        fam_outcomes = {n: hybrid[name][points.index(p)] for n, (name, p) in enumerate(fam_points)}
        chosen = folds.evaluate(fam_points, fam_outcomes)
        families[family] = folds.summary(chosen, lambda cp: f"{cp[0]} | {cp[1].label()}")
    return {
        "configurations": rows,
        "families": families,
        "grid": [p.as_dict() for p in points],
        "depth": DEPTH,
    }


def _scores(outs: Sequence[locomo.QAOutcome]) -> dict[str, Any]:
    return {k: v.as_dict() for k, v in locomo.score_by_category(outs).items()}


# --- report ----------------------------------------------------------------------------------
def render(report: Mapping[str, Any]) -> str:
    """One row per configuration and family: dense-only, hybrid defaults, held-out mean, worst fold."""
    base = report["configurations"]["text:plain"]["hybrid_protocol"]["held_out_mean"]["overall"]["R@10"]
    rows = []
    for name, r in report["configurations"].items():
        proto = r["hybrid_protocol"]
        mean = proto["held_out_mean"]["overall"]["R@10"]
        rows.append(
            [
                name,
                r["dense_only"]["overall"]["R@10"],
                r["hybrid_defaults"]["overall"]["R@10"],
                r["hybrid_defaults"]["overall"]["All@10"],
                proto["in_sample"]["scores"]["overall"]["R@10"],
                mean,
                round(mean - base, 4),
                proto["worst_fold"]["R@10"],
            ]
        )
    for family, proto in report["families"].items():
        mean = proto["held_out_mean"]["overall"]["R@10"]
        chosen = sorted({f["chosen"].split(" | ")[0] for f in proto["folds"]})
        rows.append(
            [
                f"{family} (chosen: {', '.join(chosen)})",
                None,
                None,
                None,
                proto["in_sample"]["scores"]["overall"]["R@10"],
                mean,
                round(mean - base, 4),
                proto["worst_fold"]["R@10"],
            ]
        )
    head = [
        "dense tier",
        "dense-only R@10",
        "hybrid defaults R@10",
        "hybrid defaults All@10",
        "hybrid tuned in-sample R@10",
        "hybrid held-out mean R@10",
        "vs text:plain",
        "worst fold R@10",
    ]
    lines = [
        f"### Dense-tier memory text on LoCoMo ({report.get('questions', '?')} questions, limit 20, in-process)",
        markdown_table(head, rows),
        "",
        f"hybrid grid ({len(report['grid'])} points, the defaults first): "
        + "; ".join(study.Params(**p).label() for p in report["grid"]),
    ]
    check = report.get("pgvector_check")
    if check:
        lines.append(
            f"check: the engine's own pgvector lists (plain text) give dense-only R@10 {check['dense_only_R@10']}"
            f" and hybrid defaults R@10 {check['hybrid_defaults_R@10']}"
        )
    load = report.get("environment", {}).get("load_average_1m_5m_15m")
    if load:
        lines.append(f"load average at the end (1, 5, 15 min): {', '.join(str(x) for x in load)}")
    return "\n".join(lines)
