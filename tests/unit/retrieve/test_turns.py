"""Turn positions from each candidate's next turns: exact differences up to MAX_DISTANCE."""

from __future__ import annotations

from services.retrieve.logic.turns import MAX_DISTANCE, positions


def _from_turns(turns: dict[str, list[str]], candidates: set[str]) -> dict[str, int]:
    """Feed ``positions`` what the SQL would return for sessions whose turns are listed in order."""
    order, following = {}, {}
    for session, ids in turns.items():
        chosen = [i for i in ids if i in candidates]
        for rank, memory_id in enumerate(chosen, start=1):
            order[memory_id] = (session, rank)
            at = ids.index(memory_id)
            following[memory_id] = ids[at + 1 : at + 1 + MAX_DISTANCE]
    return positions(order, following)


def test_differences_are_exact_up_to_max_distance_and_larger_beyond() -> None:
    turns = {"s1": [f"a{i}" for i in range(12)], "s2": ["b0", "b1", "b2"]}
    candidates = {"a0", "a1", "a3", "a7", "a8", "a11", "b0", "b2"}
    pos = _from_turns(turns, candidates)
    assert set(pos) == candidates
    true = {m: turns[s].index(m) for s in turns for m in turns[s] if m in candidates}
    for x in candidates:
        for y in candidates:
            same = x[0] == y[0]
            if not same:
                continue
            real, got = abs(true[x] - true[y]), abs(pos[x] - pos[y])
            if real <= MAX_DISTANCE:
                assert got == real, (x, y)
            else:
                assert got > MAX_DISTANCE, (x, y)


def test_nothing_in_nothing_out() -> None:
    assert positions({}, {}) == {}
    assert positions({"x": ("s", 1)}, {}) == {"x": 0}
