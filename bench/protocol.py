"""The quality benchmark's honest protocol: defaults, in-sample tuning and leave-one-conversation-out.

After the turns are searchable, ``run_protocol`` reads every question's candidates once
(``study.collect``, the engine's own adapters, no NATS hop for the search) and scores a fixed
grid of hybrid settings (``grid()``, the defaults first) on each conversation, and a small grid
per lever judged on its own (``lever_grids()``). ``folds.evaluate`` then picks, per held-out
conversation, the point that is best on the other four. The report
says which settings produced every row. No randomness is involved: the grid, the data and
the tie-break (earlier point) are fixed, so a re-run gives the same rows.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from bench import folds, locomo, study
from bench.report import markdown_table
from services.retrieve.logic.bm25 import KEYWORD_SCORINGS

#: deepest candidate list the grid asks for (each point truncates it to its own depth; 200
#: never beat 100 on any fold of a wider sweep)
MAX_DEPTH = 100


def default_point() -> study.Params:
    return study.defaults()


#: ``ftsFullCoverage`` values of the grid (0 = off), at the default ``ftsCoveragePower`` (1.0 lost on every
#: fold: held-out R@10 mean 0.750 against 0.806 for 0.5)
COVERAGE = (0.0, 0.5)
#: ``temporalBoost`` values of the grid (0 = off)
TEMPORAL = (0.0, 0.4)
#: ``temporalReasoning`` values of the grid (0 = off)
REASONING = (0.0, 0.4)


#: ``sessionEvidence`` and ``sessionSpread`` values of their own small grids (``lever_grids``)
SESSION_EVIDENCE = (1, 2, 3)
SESSION_SPREAD = (0.0, 0.03, 0.1)
#: ``temporalLift`` values of its own small grid
TEMPORAL_LIFT = (0.0, 0.25, 0.5, 0.75, 1.0)
#: ``temporalWindow`` values of its own small grid
TEMPORAL_WINDOW = (0, 20)


def lever_grids() -> dict[str, list[study.Params]]:
    """A small grid per lever of its own, beside the main one (crossing it would multiply its cost):
    the defaults with the shares each interacts with (session and neighbour shares for the session
    levers, the reasoning's share for its lift and its window candidates), times each value."""
    d = default_point()
    base = [replace(d, session_boost=s, neighbour_boost=n) for s in (0.1, 0.3, 0.5) for n in (0.3, 0.5)]
    timed = [replace(d, temporal_reasoning=r, neighbour_boost=n) for r in (0.2, 0.4, 0.6) for n in (0.3, 0.5)]
    return {
        "session_evidence": [replace(p, session_evidence=m) for m in SESSION_EVIDENCE for p in base],
        "session_spread": [replace(p, session_spread=w) for w in SESSION_SPREAD for p in base],
        "temporal_lift": [replace(p, temporal_lift=a) for a in TEMPORAL_LIFT for p in timed],
        "temporal_window": [replace(p, temporal_window=w) for w in TEMPORAL_WINDOW for p in timed],
    }


def grid() -> list[study.Params]:
    """The defaults, then score fusion over keyword scoring x depth x weight x session x neighbour
    x speaker shares x keyword coverage x temporal share x temporal reasoning share; the settings
    judged on their own grids (``lever_grids``) keep their defaults."""
    points = [default_point()]
    for scoring, depth, fts, session, neighbour, speaker, coverage, temporal, reasoning in itertools.product(
        KEYWORD_SCORINGS, (50, 100), (0.5, 0.6), (0.1, 0.3), (0.3, 0.5), (0.0, 0.3, 0.6), COVERAGE, TEMPORAL, REASONING
    ):
        p = replace(
            points[0],
            fusion="score",
            rrf_k=60,
            depth=depth,
            fts_weight=fts,
            vec_weight=round(1 - fts, 2),
            session_boost=session,
            neighbour_boost=neighbour,
            speaker_boost=speaker,
            fts_full_coverage=coverage,
            keyword_ranking=scoring,
            temporal_boost=temporal,
            temporal_reasoning=reasoning,
        )
        if p != points[0]:
            points.append(p)
    return points


async def run_protocol(
    dsn: str,
    nc: Any,
    convs: Sequence[locomo.Conversation],
    owner_of: Callable[[locomo.Conversation], str],
    dia_of_event: dict[str, str],
    *,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The protocol section of the quality report: the candidates read in-process, then ``evaluate_grid``."""
    started = time.perf_counter()
    cands = await study.collect(dsn, nc, convs, owner_of, dia_of_event, MAX_DEPTH)
    collected_s = time.perf_counter() - started
    log(f"protocol: candidates of {len(cands)} questions read in {collected_s:.1f} s; scoring the grid ...")
    # minutes of pure Python: in a thread, so this process's NATS connection still answers the
    # server's pings (a blocked event loop is dropped as a stale connection)
    out = await asyncio.to_thread(evaluate_grid, cands)
    out["seconds"] = {"collect": round(collected_s, 1), "total": round(time.perf_counter() - started, 1)}
    return out


def evaluate_grid(
    cands: Sequence[study.Candidates],
    points: Sequence[study.Params] | None = None,
    levers: Mapping[str, Sequence[study.Params]] | None = None,
) -> dict[str, Any]:
    """Score every grid point on every conversation, then the folds (pure, given the candidates);
    ``levers`` (default ``lever_grids()``): the levers of ``OWN_GRID_LEVERS``, each folded over its own grid."""
    points = list(points) if points is not None else grid()
    levers = lever_grids() if levers is None else levers

    def scored(grid_points: Sequence[study.Params]) -> dict[int, study.Outcomes]:
        return {n: study.by_conversation(cands, study.outcomes(cands, p)) for n, p in enumerate(grid_points)}

    outcomes = scored(points)
    result = folds.evaluate(points, outcomes)
    out = folds.summary(result, study.Params.label)
    out["ceiling"] = folds.ceiling(points, outcomes, study.Params.label)
    for key, field, _title in LEVERS:
        out[key] = by_lever(points, outcomes, field)
    for key, field, _title in OWN_GRID_LEVERS:
        if key in levers:
            out[key] = by_lever(levers[key], scored(levers[key]), field)
    default_all = [o for outs in outcomes[0].values() for o in outs]
    per_conv = {conv: round(locomo.score(outs).recall[10], 4) for conv, outs in outcomes[0].items()}
    out["defaults"] = {
        "settings": points[0].label(),
        "in_sample": {k: v.as_dict() for k, v in locomo.score_by_category(default_all).items()},
        "per_conversation_R@10": per_conv,
        "mean_of_conversations_R@10": round(sum(per_conv.values()) / len(per_conv), 4),
    }
    out["grid"] = [p.as_dict() for p in points]
    return out


#: the levers whose every value is folded over its own grid points (report key, ``Params`` field, title)
LEVERS = (
    ("keyword_scoring", "keyword_ranking", "keyword scoring"),
    ("keyword_coverage", "fts_full_coverage", "ftsFullCoverage"),
    ("temporal_boost", "temporal_boost", "temporalBoost"),
    ("temporal_reasoning", "temporal_reasoning", "temporalReasoning"),
)
#: the levers folded over their own grids (``lever_grids``), reported alike
OWN_GRID_LEVERS = (
    ("session_evidence", "session_evidence", "sessionEvidence"),
    ("session_spread", "session_spread", "sessionSpread"),
    ("temporal_lift", "temporal_lift", "temporalLift"),
    ("temporal_window", "temporal_window", "temporalWindow"),
)


def by_lever(
    points: Sequence[study.Params], outcomes: dict[int, dict[str, list[locomo.QAOutcome]]], field: str
) -> dict[str, Any]:
    """One lever alone: for each value of ``Params.<field>`` in the grid, the folds over the
    points with that value (the held-out mean, the worst fold, each category's mean and worst
    fold), and the best of those points in-sample."""
    out: dict[str, Any] = {}
    for value in dict.fromkeys(getattr(p, field) for p in points):
        index = [i for i, p in enumerate(points) if getattr(p, field) == value]
        sub = folds.evaluate([points[i] for i in index], {n: outcomes[i] for n, i in enumerate(index)})
        worst = sub.worst()
        out[str(value)] = {
            "points": len(index),
            "held_out_mean_R@10": round(sub.held_out_mean(), 4),
            "worst_fold": {"held_out": worst.held_out, "R@10": worst.held_out_scores["overall"]["R@10"]},
            "in_sample_R@10": sub.in_sample["overall"]["R@10"],
            "categories": {
                cat: {"mean": s["mean"], "worst": s["worst"]["R@10"]}
                for cat, s in sub.spread().items()
                if cat != "overall"
            },
        }
    return out


def render(protocol: dict[str, Any]) -> str:
    """Defaults, tuned in-sample, each held-out fold, their mean and the worst fold."""
    keys = ("R@5", "R@10", "R@20", "All@10")

    def row(name: str, settings: str, s: dict[str, Any]) -> list[Any]:
        multi = s.get("1 multi-hop", {}).get("R@10")
        return [name, settings, *(s["overall"][k] for k in keys), multi]

    d = protocol["defaults"]
    rows = [
        row("defaults, all 5 (in-sample)", d["settings"], d["in_sample"]),
        row("tuned on all 5 (in-sample)", protocol["in_sample"]["chosen"], protocol["in_sample"]["scores"]),
    ]
    rows += [row(f"held out {f['held_out']}", f["chosen"], f["scores"]) for f in protocol["folds"]]
    mean = protocol["held_out_mean"]
    rows.append(
        [
            "held-out mean (5 folds)",
            "tuned on the other four",
            *(mean["overall"][k] for k in keys),
            mean.get("1 multi-hop", {}).get("R@10"),
        ]
    )
    worst = protocol["worst_fold"]
    head = ["row", "settings", *keys, "multi-hop R@10"]
    return "\n".join(
        [
            "### Leave-one-conversation-out (in-process study, same engine code; hybrid, limit 20)",
            markdown_table(head, rows),
            f"worst fold: {worst['held_out']} R@10 {worst['R@10']}; defaults by conversation: "
            + ", ".join(f"{c} {v}" for c, v in d["per_conversation_R@10"].items()),
            *_ceiling_lines(protocol),
            "",
            *_spread_lines(protocol),
            *_lever_lines(protocol),
        ]
    )


def _ceiling_lines(protocol: dict[str, Any]) -> list[str]:
    """The grid's ceiling per conversation: the best point chosen on that conversation itself."""
    top = protocol.get("ceiling") or {}
    if not top:
        return []
    parts = ", ".join(f"{conv} {c['R@10']}" for conv, c in top.items())
    return [f"grid ceiling (the best point of the grid, chosen on each conversation itself): {parts}"]


def _spread_lines(protocol: dict[str, Any]) -> list[str]:
    """Held-out R@10 per category: the folds' mean beside their worst and best fold."""
    spread = protocol.get("fold_spread") or {}
    if not spread:
        return []
    rows = [
        [cat, s["folds"], s["mean"], f"{s['worst']['R@10']} ({s['worst']['held_out']})",
         f"{s['best']['R@10']} ({s['best']['held_out']})", s["spread"]]
        for cat, s in spread.items()
    ]  # fmt: skip
    head = ["category", "folds", "held-out mean R@10", "worst fold", "best fold", "spread"]
    return ["Held-out R@10 by category, across the folds:", "", markdown_table(head, rows), ""]


def _lever_lines(protocol: dict[str, Any]) -> list[str]:
    """One line per lever of more than one value: each value's folds over its own points."""
    lines = []
    for key, _field, title in (*LEVERS, *OWN_GRID_LEVERS):
        by_value = protocol.get(key) or {}
        if len(by_value) < 2:
            continue
        parts = [
            f"{value} ({v['points']} points) held-out R@10 mean {v['held_out_mean_R@10']}, worst fold "
            f"{v['worst_fold']['held_out']} {v['worst_fold']['R@10']}, best in-sample {v['in_sample_R@10']}"
            + _category_parts(v)
            for value, v in by_value.items()
        ]
        lines.append(f"{title}, the grid of each value alone: " + "; ".join(parts))
    return lines


def _category_parts(v: dict[str, Any]) -> str:
    cats = v.get("categories") or {}
    parts = [
        f", {name} held-out mean {c['mean']} (worst fold {c['worst']})"
        for cat, name in (("2 temporal", "temporal"), ("1 multi-hop", "multi-hop"), ("3 open-domain", "open-domain"))
        if (c := cats.get(cat))
    ]
    return "".join(parts)
