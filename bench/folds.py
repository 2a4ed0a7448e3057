"""Leave-one-conversation-out: how a tuned setting does on a conversation it was not tuned on.

For each conversation (a fold), the grid point with the best R@10 over the *other*
conversations' questions is chosen, then scored on the held-out conversation alone. The
report gives each fold's choice and held-out scores, their mean, the worst fold and, per
question category, the spread of the folds, next to the in-sample figures (the best point
over all conversations, scored on them: optimistic by construction) and any fixed points
(the shipped defaults), and each conversation's ceiling: the best R@10 any point of the grid
reaches on it, chosen looking at that conversation itself (no choice from the grid serves it
better, so a fold below a target its ceiling also misses needs a new lever, not another choice).
Pure: ``evaluate`` is given the scores of every (point, conversation), computed by the caller once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bench import locomo

P = TypeVar("P")
Metric = Callable[[Sequence[locomo.QAOutcome]], float]


def r_at_10(outs: Sequence[locomo.QAOutcome]) -> float:
    return locomo.score(outs).recall[10]


@dataclass(frozen=True)
class Fold(Generic[P]):
    held_out: str
    chosen: P
    tuned_score: float  # the selection metric on the four tuning conversations
    held_out_scores: dict[str, Any]  # by category, as ``locomo.Scores.as_dict``


@dataclass(frozen=True)
class Protocol(Generic[P]):
    folds: list[Fold[P]]
    in_sample_point: P
    in_sample: dict[str, Any]

    def held_out_mean(self, key: str = "R@10", category: str = "overall") -> float:
        return math.fsum(f.held_out_scores[category][key] for f in self.folds) / len(self.folds)

    def worst(self, key: str = "R@10") -> Fold[P]:
        return min(self.folds, key=lambda f: f.held_out_scores["overall"][key])

    def spread(self, key: str = "R@10") -> dict[str, dict[str, Any]]:
        """Per category, the held-out ``key`` of the folds that have questions of it: mean, the
        worst and best fold (a mean hides a conversation the tuning does not carry to)."""
        out: dict[str, dict[str, Any]] = {}
        for cat in self.in_sample:
            values = [(f.held_out_scores[cat][key], f.held_out) for f in self.folds if cat in f.held_out_scores]
            if not values:
                continue
            low, high = min(values), max(values)
            out[cat] = {
                "folds": len(values),
                "mean": round(math.fsum(v for v, _ in values) / len(values), 4),
                "worst": {"held_out": low[1], key: low[0]},
                "best": {"held_out": high[1], key: high[0]},
                "spread": round(high[0] - low[0], 4),
            }
        return out


def evaluate(
    points: Sequence[P],
    outcomes: Mapping[int, Mapping[str, Sequence[locomo.QAOutcome]]],
    metric: Metric = r_at_10,
) -> Protocol[P]:
    """``outcomes[i][conversation]``: point ``i``'s outcomes on one conversation's questions.

    Ties in the selection metric go to the earlier point (list the defaults first).
    """
    if not points:
        raise ValueError("no grid points")
    convs = list(outcomes[0])
    if len(convs) < 2:
        raise ValueError("leave-one-conversation-out needs at least two conversations")
    folds: list[Fold[P]] = []
    for held in convs:
        tuned = [metric([o for c in convs if c != held for o in outcomes[i][c]]) for i in range(len(points))]
        best_i, best = _best(tuned)
        scores = {k: v.as_dict() for k, v in locomo.score_by_category(outcomes[best_i][held]).items()}
        folds.append(Fold(held, points[best_i], round(best, 4), scores))
    best_i, _ = _best([metric([o for c in convs for o in outcomes[i][c]]) for i in range(len(points))])
    everything = [o for c in convs for o in outcomes[best_i][c]]
    in_sample = {k: v.as_dict() for k, v in locomo.score_by_category(everything).items()}
    return Protocol(folds, points[best_i], in_sample)


def ceiling(
    points: Sequence[P],
    outcomes: Mapping[int, Mapping[str, Sequence[locomo.QAOutcome]]],
    label: Callable[[P], str],
    metric: Metric = r_at_10,
) -> dict[str, dict[str, Any]]:
    """Per conversation, the best ``metric`` of any point on that conversation alone, and the
    (earliest) point reaching it."""
    out: dict[str, dict[str, Any]] = {}
    for conv in outcomes[0]:
        best_i, best = _best([metric(outcomes[i][conv]) for i in range(len(points))])
        out[conv] = {"R@10": round(best, 4), "settings": label(points[best_i])}
    return out


def _best(values: Sequence[float]) -> tuple[int, float]:
    """The index of the highest of ``values`` (one per point), and that value; ties (within 1e-12)
    go to the earlier point."""
    best_i, best = 0, -math.inf
    for i, value in enumerate(values):
        if value > best + 1e-12:
            best_i, best = i, value
    return best_i, best


def summary(protocol: Protocol[Any], label: Callable[[Any], str]) -> dict[str, Any]:
    """The JSON of a protocol: per fold, mean and worst fold, in-sample, which settings each."""
    keys = ("R@5", "R@10", "R@20", "All@10")
    cats = list(protocol.in_sample)
    worst = protocol.worst()
    return {
        "folds": [
            {
                "held_out": f.held_out,
                "chosen": label(f.chosen),
                "tuned_R@10": f.tuned_score,
                "scores": f.held_out_scores,
            }
            for f in protocol.folds
        ],
        "held_out_mean": {
            c: {k: round(protocol.held_out_mean(k, c), 4) for k in keys}
            for c in cats
            if all(c in f.held_out_scores for f in protocol.folds)
        },
        "worst_fold": {"held_out": worst.held_out, "R@10": worst.held_out_scores["overall"]["R@10"]},
        "fold_spread": protocol.spread(),
        "in_sample": {"chosen": label(protocol.in_sample_point), "scores": protocol.in_sample},
    }
