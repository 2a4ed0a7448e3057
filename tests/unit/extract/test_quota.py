"""Facts admitted against a quota: new keys count one memory and their bytes, changed keys
only their growth, in order until the quota is full; 0 is no quota."""

from __future__ import annotations

from services.extract.logic.quota import Holding, admit


def test_new_facts_are_admitted_in_order_until_the_count_is_full() -> None:
    facts = [("a", 10), ("b", 10), ("c", 10)]
    assert admit(facts, Holding(1, 50, {}), max_memories=3, max_bytes=0) == ({0, 1}, {2})
    assert admit(facts, Holding(3, 50, {}), max_memories=3, max_bytes=0) == (set(), {0, 1, 2})
    assert admit(facts, Holding(10**6, 10**9, {}), max_memories=0, max_bytes=0) == ({0, 1, 2}, set())


def test_a_changed_fact_counts_only_its_growth() -> None:
    full = Holding(3, 100, {"a": 10, "b": 40})
    assert admit([("a", 10), ("b", 5)], full, max_memories=3, max_bytes=100) == ({0, 1}, set())  # no growth
    assert admit([("a", 11)], full, max_memories=0, max_bytes=100) == (set(), {0})  # grows past the bytes
    assert admit([("b", 5), ("a", 40)], full, max_memories=0, max_bytes=100) == ({0, 1}, set())  # shrink makes room


def test_bytes_bound_new_facts_and_a_refused_one_leaves_room_for_a_smaller_one() -> None:
    facts = [("a", 30), ("b", 80), ("c", 20)]
    assert admit(facts, Holding(0, 40, {}), max_memories=0, max_bytes=100) == ({0, 2}, {1})
    same_key = [("a", 30), ("a", 50)]  # the second counts as a change of the first: its growth only
    assert admit(same_key, Holding(0, 0, {}), max_memories=1, max_bytes=60) == ({0, 1}, set())
    assert admit(same_key, Holding(0, 0, {}), max_memories=1, max_bytes=45) == ({0}, {1})
