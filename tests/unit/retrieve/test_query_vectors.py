"""Retrieve's own query-vector cache: hits, per owner, the signature rules, size 0."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from services.retrieve.query_vectors import QueryVectors


def kept(cache: QueryVectors, owner: str, query: str, searched: Collection[str] = ()) -> tuple[list[float], str] | None:
    """The kept vector as a list, with its signature; the stores take it as float32, as kept."""
    got = cache.get(owner, query, searched)
    if got is None:
        return None
    assert got[0].dtype == np.float32
    return got[0].tolist(), got[1]


def test_a_repeated_query_is_served_with_its_signature() -> None:
    cache = QueryVectors(8, ttl_s=60)
    assert cache.get("alice", "where is the quokka", ()) is None
    cache.put("alice", "where is the quokka", "local:m:3", [0.25, -0.5, 1.0])
    assert kept(cache, "alice", "where is the quokka") == ([0.25, -0.5, 1.0], "local:m:3")
    assert cache.get("alice", "where is the echidna", ()) is None


def test_one_owner_never_gets_what_another_asked() -> None:
    cache = QueryVectors(8, ttl_s=60)
    cache.put("alice", "is bob leaving", "local:m:1", [1.0])
    assert cache.get("mallory", "is bob leaving", ()) is None  # no faster answer to tell her alice asked


def test_an_answer_of_another_signature_drops_the_older_vectors() -> None:
    cache = QueryVectors(8, ttl_s=60)
    cache.put("o", "a", "local:old:3", [1.0, 0.0, 0.0])
    cache.put("o", "b", "local:new:2", [0.0, 1.0])
    assert cache.get("o", "a", ()) is None  # never paired with the new signature
    assert kept(cache, "o", "b") == ([0.0, 1.0], "local:new:2")


def test_size_zero_keeps_nothing() -> None:
    cache = QueryVectors(0, ttl_s=60)
    cache.put("o", "a", "local:m:1", [1.0])
    assert cache.get("o", "a", ()) is None


def test_vectors_of_a_signature_no_store_searches_any_more_are_dropped() -> None:
    cache = QueryVectors(8, ttl_s=60)
    cache.put("o", "a", "local:old:1", [1.0])
    assert kept(cache, "o", "a", {"local:old:1", "local:new:1"}) == ([1.0], "local:old:1")  # switch pending
    assert cache.get("o", "a", {"local:new:1"}) is None  # the switch completed
    assert cache.get("o", "a", ()) is None  # and the old vector is gone, not merely skipped
