"""Session-level re-scoring (pure): how much evidence a session holds, and spreading results over sessions.

A question's evidence often spans several conversation sessions. ``evidence_gains`` scores a
session by the mean of its best ``members`` candidates (1: the best alone, ``fusion.session_gains``)
and lifts each member by a share of it; ``spread_scores`` discounts each further result of a
session already represented higher up (the k-th of a session counts ``(1 - weight) ** k``), so a
second session's best memory can pass a third turn of the first. Memories without a session
neither gain nor are discounted. Scores are non-negative (fused scores and their boosts).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from services.retrieve.logic.fusion import Fused, Scores, _gained, session_gains

MAX_MEMBERS = 10


def evidence_gains(scores: Scores, session_of: Mapping[str, str | None], share: float, members: int = 1) -> Scores:
    """Each memory gains ``share`` x its session's evidence: the sum of the session's best
    ``members`` scores over ``members`` (a session with fewer candidates counts the missing as 0,
    so a session holding several matches outranks one holding a single match as good as theirs)."""
    if not 1 <= members <= MAX_MEMBERS:
        raise ValueError(f"members must be within 1..{MAX_MEMBERS}, got {members}")
    if members == 1:
        return session_gains(scores, session_of, share)

    def gains() -> Iterable[tuple[str, float]]:
        by_session: dict[str, list[float]] = {}
        for memory_id, score in scores.items():
            if (session := session_of.get(memory_id)) is not None:
                by_session.setdefault(session, []).append(score)
        evidence = {s: math.fsum(sorted(v, reverse=True)[:members]) / members for s, v in by_session.items()}
        return [(i, evidence[s]) for i in scores if (s := session_of.get(i)) is not None]

    return _gained(scores, share, gains)


def spread_scores(ranked: Sequence[Fused], session_of: Mapping[str, str | None], weight: float) -> Scores:
    """The scores of ``ranked`` (best first) with the k-th result of each session (k from 0) times
    ``(1 - weight) ** k``: a session's best result keeps its score. Within a session the order is
    unchanged, so the discount of a result does not depend on the other sessions and one sort of
    the new scores gives the greedy "best next, counting what its session already has" order."""
    if not (math.isfinite(weight) and 0 <= weight < 1):
        raise ValueError(f"weight must be within 0..1 (1 excluded), got {weight}")
    out: Scores = {}
    seen: dict[str, int] = {}
    keep = 1.0 - weight
    for f in ranked:
        if f.memory_id in out:
            continue
        session = session_of.get(f.memory_id)
        if session is None or weight == 0:
            out[f.memory_id] = f.score
            continue
        k = seen.get(session, 0)
        seen[session] = k + 1
        out[f.memory_id] = f.score * keep**k if k else f.score
    return out
