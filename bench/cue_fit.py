"""The answer cues' weights fitted, not picked: ``questionPenalty`` and ``timeMentionBoost``.

Over each question's ``CUE_DEPTH`` best candidates as the other boosts rank them (the cues
off), a logistic regression predicts "this memory is an evidence turn" from three features:
its boosted score, whether its text is itself a question (it ends with "?") and whether it
says when (``time_cues.says_when``). Each cue's weight divided by the score's is the cue in
fused-score points, which is how the engine adds it (``fusion.cue_gains``). ``folds`` fits on
every conversation but one and scores the one left out with the fitted cues: the honest
figure for the defaults, which were fitted on all five (``fit``). Pure, given the candidates;
Newton's method from zero, so a re-run gives the same weights.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench import locomo, study
from services.retrieve.engine import fuse_lists
from services.retrieve.logic.fusion import CUE_DEPTH, normalize_query
from services.retrieve.logic.plan import boost
from services.retrieve.logic.time_cues import says_when

#: L2 penalty on the standardised weights (the bias is not penalised)
L2 = 1.0
NEWTON_STEPS = 30


def features(c: study.Candidates, p: study.Params) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(X, y) of one question: [score, asks, says when] per candidate among its ``CUE_DEPTH`` best."""
    off = dataclasses.replace(p, question_penalty=0.0, time_mention_boost=0.0)
    keyword = c.keyword[p.keyword_ranking]
    query = normalize_query(c.qa.question)
    fused = fuse_lists(
        {"fts": keyword.ranked[: p.depth], "vec": c.vec[: p.depth]}, study.settings(off), query, keyword.cover
    )
    rows = {f.memory_id: c.rows[f.memory_id] for f in fused if f.memory_id in c.rows}
    ranked = boost(fused, rows, p.session_boost, p.neighbour_boost, p.speaker_boost, query, p.temporal_boost)
    best = [f for f in ranked if f.memory_id in rows][:CUE_DEPTH]
    x = [
        [f.score, float(rows[f.memory_id].content.rstrip().endswith("?")), float(says_when(rows[f.memory_id].content))]
        for f in best
    ]
    y = [float(c.dia.get(f.memory_id) in c.qa.evidence) for f in best]
    return np.array(x, dtype=np.float64).reshape(-1, 3), np.array(y, dtype=np.float64)


def fit(cands: Sequence[study.Candidates], p: study.Params) -> tuple[float, float]:
    """(questionPenalty, timeMentionBoost) in fused-score points, fitted on ``cands``."""
    parts = [features(c, p) for c in cands]
    x = np.vstack([xs for xs, _ in parts])
    y = np.concatenate([ys for _, ys in parts])
    mean, sd = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / sd, np.ones((len(x), 1))])
    ridge = np.diag([L2, L2, L2, 0.0])
    w = np.zeros(4)
    for _ in range(NEWTON_STEPS):
        prob = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (prob - y) + ridge @ w
        hessian = (z * (prob * (1 - prob))[:, None]).T @ z + ridge
        w -= np.linalg.solve(hessian, gradient)
    raw = w[:3] / sd
    if raw[0] <= 0:
        raise ValueError("the fitted weight of the score is not positive: no cue in score points")
    return round(max(0.0, float(-raw[1] / raw[0])), 2), round(max(0.0, float(raw[2] / raw[0])), 2)


def folds(cands: Sequence[study.Candidates], p: study.Params) -> dict[str, Any]:
    """Per conversation: the cues fitted on the others and its R@10 with them (from ``p``'s other
    settings); their mean and worst fold, and the cues fitted on all."""
    convs = list(dict.fromkeys(c.conversation for c in cands))
    rows: list[dict[str, Any]] = []
    for held in convs:
        penalty, bonus = fit([c for c in cands if c.conversation != held], p)
        fitted = dataclasses.replace(p, question_penalty=penalty, time_mention_boost=bonus)
        outs = study.outcomes([c for c in cands if c.conversation == held], fitted)
        r_at_10 = round(locomo.score(outs).recall[10], 4)
        rows.append({"held_out": held, "questionPenalty": penalty, "timeMentionBoost": bonus, "R@10": r_at_10})
    worst = min(rows, key=lambda r: r["R@10"])
    penalty, bonus = fit(cands, p)
    return {
        "folds": rows,
        "held_out_mean_R@10": round(math.fsum(r["R@10"] for r in rows) / len(rows), 4),
        "worst_fold": {"held_out": worst["held_out"], "R@10": worst["R@10"]},
        "fitted_on_all": {"questionPenalty": penalty, "timeMentionBoost": bonus},
    }
