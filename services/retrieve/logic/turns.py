"""Turn positions for the neighbour boost from each candidate's next turns (pure).

The boost only needs how far apart two candidates of one session are, up to
``MAX_DISTANCE`` turns. ``tiers.fetch_rows`` returns, per chat-turn candidate of a session
holding two or more, its order among those candidates and the ids of the next
``MAX_DISTANCE`` chat turns of its session (any state: a turn counts as it was stored). Walking
each session's candidates in order, a candidate found among the previous one's next turns is
that many turns further; otherwise it is placed ``MAX_DISTANCE + 1`` further, which is what a
boost reaching ``MAX_DISTANCE`` turns can tell apart from any larger gap. Differences of the
positions are therefore exact wherever they are at most ``MAX_DISTANCE``, and larger elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: How far the neighbour boost reaches (``fusion.neighbour_boost``'s default weights: ±1, ±2).
MAX_DISTANCE = 2


def positions(order: Mapping[str, tuple[str, int]], following: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """``order``: candidate -> (session, order among its session's candidates); ``following``:
    candidate -> its next turns, nearest first. Returns candidate -> position in its session."""
    by_session: dict[str, list[tuple[int, str]]] = {}
    for memory_id, (session, rank) in order.items():
        by_session.setdefault(session, []).append((rank, memory_id))
    out: dict[str, int] = {}
    for members in by_session.values():
        members.sort()
        at, previous = 0, None
        for _rank, memory_id in members:
            if previous is not None:
                after = list(following.get(previous, ()))[:MAX_DISTANCE]
                at += after.index(memory_id) + 1 if memory_id in after else MAX_DISTANCE + 1
            out[memory_id] = at
            previous = memory_id
    return out
