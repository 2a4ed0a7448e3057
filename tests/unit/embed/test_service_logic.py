"""The embed service's pure parts: signatures, source resolution, meta transitions, job triage,
the LRU+TTL cache, the micro-batcher and the inference gate."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import numpy as np
import pytest

from services.embed.batcher import MicroBatcher
from services.embed.logic import (
    MemoryState,
    SignatureParts,
    cache_key,
    chunks,
    length_order,
    meta_action,
    parse_signature,
    plan_batches,
    reindex_msg_id,
    resolve_source,
    same_vectors,
    searched_too,
    signature,
    triage,
    unique_by_id,
)
from services.embed.sources import Inference, InferenceGate
from shared.vectors.cache import VectorCache
from shared.vectors.signature import stored_signature, vector_quantization

SIG = "local:all-MiniLM-L6-v2:384"


def test_signature_round_trip() -> None:
    assert signature("local", "all-MiniLM-L6-v2", 384) == SIG
    assert signature("local", "all-MiniLM-L6-v2", 384, "dynamic-int8") == f"{SIG}:dynamic-int8"
    assert parse_signature(SIG) == SignatureParts("local", "all-MiniLM-L6-v2", 384, None)
    assert parse_signature(f"{SIG}:dynamic-int8") == SignatureParts("local", "all-MiniLM-L6-v2", 384, "dynamic-int8")
    # Ollama-style model names carry a ':' of their own.
    assert parse_signature("remote:nomic-embed-text:latest:768") == SignatureParts(
        "remote", "nomic-embed-text:latest", 768, None
    )
    for bad in ("", "local", "local:model", "other:model:384", "local::384", "local:model:big", "local:m:half"):
        assert parse_signature(bad) is None, bad


def test_the_storage_is_the_signatures_last_part() -> None:
    assert stored_signature(SIG, "half") == f"{SIG}:half" == stored_signature(f"{SIG}:half", "half")
    assert stored_signature(f"{SIG}:half", "none") == SIG == stored_signature(SIG, "none")
    assert vector_quantization(f"{SIG}:dynamic-int8:half") == "half" and vector_quantization(SIG) == "none"
    assert parse_signature(f"{SIG}:half") == SignatureParts("local", "all-MiniLM-L6-v2", 384, None, "half")
    assert parse_signature(f"{SIG}:dynamic-int8:half") == SignatureParts(
        "local", "all-MiniLM-L6-v2", 384, "dynamic-int8", "half"
    )
    assert parse_signature("remote:nomic-embed-text:latest:768:half") == SignatureParts(
        "remote", "nomic-embed-text:latest", 768, None, "half"
    )
    # a different storage is a different signature: its vectors get their own jobs and cache entries
    h = "ab" * 32
    assert reindex_msg_id("m1", h, SIG, None) != reindex_msg_id("m1", h, f"{SIG}:half", SIG)
    assert triage(MemoryState("m", "o", "t", h, SIG, False), f"{SIG}:half") == "embed"


def test_cache_key_is_signature_then_sha256() -> None:
    key = cache_key(SIG, "hello")
    assert key == f"{SIG}:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert cache_key(f"{SIG}:dynamic-int8", "hello") != key
    # an owner's entries are its own: no tenant is answered from another's query
    assert cache_key(SIG, "hello", "alice") not in (key, cache_key(SIG, "hello", "mallory"))
    assert cache_key(SIG, "hello", "alice") == cache_key(SIG, "hello", "alice")
    h = "ab" * 32
    assert reindex_msg_id("m1", h, SIG, None) == reindex_msg_id("m1", h, SIG, None)  # deduplicated
    assert reindex_msg_id("m1", h, SIG, None) != reindex_msg_id("m1", h, f"{SIG}:dynamic-int8", None)
    assert reindex_msg_id("m1", h, SIG, None) != reindex_msg_id("m1", h, SIG, "old:m:8")  # state moved on
    assert reindex_msg_id("m1", h, SIG, None) != reindex_msg_id("m1", "cd" * 32, SIG, None)


def test_resolve_source() -> None:
    assert resolve_source("auto", None).kind == "local"
    assert "not set" in resolve_source("auto", None).reason
    assert resolve_source("auto", "http://x/v1").kind == "remote"
    assert resolve_source("local", "http://x/v1").kind == "local"
    assert resolve_source("remote", None).kind == "remote"


@pytest.mark.parametrize(
    ("active", "pending", "embedded", "expected"),
    [
        (None, None, False, "init"),
        (None, None, True, "start_change"),  # a store added to memories embedded before
        (SIG, None, True, "noop"),
        (SIG, SIG, True, "noop"),
        (SIG, "other:m:8", True, "cancel_change"),  # configuration reverted mid-change
        ("other:m:8", None, True, "start_change"),
        ("other:m:8", SIG, True, "continue_change"),
        ("other:m:8", "third:m:8", True, "start_change"),
        (None, SIG, True, "continue_change"),
    ],
)
def test_meta_action(active: str | None, pending: str | None, embedded: bool, expected: str) -> None:
    assert meta_action(active, pending, SIG, memories_embedded=embedded) == expected


def _state(mid: str = "m1", *, needs: bool = True, sig: str | None = None) -> MemoryState:
    return MemoryState(mid, "alice", "text", "h", sig, needs)


def test_triage() -> None:
    assert triage(None, SIG) == "deleted"
    assert triage(_state(needs=True, sig=SIG), SIG) == "embed"
    assert triage(_state(needs=False, sig=SIG), SIG) == "unchanged"
    assert triage(_state(needs=False, sig="old:m:8"), SIG) == "embed"
    assert triage(_state(needs=False, sig=None), SIG) == "embed"
    rows = [_state("a"), _state("b"), _state("a")]
    assert [r.memory_id for r in unique_by_id(rows)] == ["a", "b"]


def test_plan_batches_bounds_padded_tokens_in_order() -> None:
    assert plan_batches([], 8, 100) == []
    assert plan_batches([10] * 10, 4, 1000) == [range(0, 4), range(4, 8), range(8, 10)]
    # 256-token texts: 4096 padded tokens allow 16 per call.
    assert [len(r) for r in plan_batches([256] * 40, 32, 4096)] == [16, 16, 8]
    # A long text between short ones goes alone: padding the short ones to 200 costs more
    # than two more calls.
    assert plan_batches([10, 10, 200, 10], 32, 400) == [range(0, 2), range(2, 3), range(3, 4)]
    # A text over the budget on its own still gets a call.
    assert plan_batches([500, 10], 32, 100) == [range(0, 1), range(1, 2)]


def test_plan_batches_buckets_sorted_lengths_by_padding_cost() -> None:
    lengths = sorted([12] * 8 + [40] * 8 + [120] * 2)
    plan = plan_batches(lengths, 64, 100_000, call_overhead=8)
    # Three buckets of one length each: no text is padded.
    assert [(r.start, r.stop) for r in plan] == [(0, 8), (8, 16), (16, 18)]
    # Similar lengths share a call rather than pay the per-call overhead again.
    assert plan_batches([20, 21, 22, 23], 64, 100_000, call_overhead=8) == [range(0, 4)]
    # A huge overhead makes one call of everything; none makes every length its own bucket.
    assert plan_batches(lengths, 64, 100_000, call_overhead=10_000) == [range(0, 18)]
    assert len(plan_batches([1, 2, 3, 4], 64, 100_000, call_overhead=0)) == 4
    padded = sum(len(r) * max(lengths[i] for i in r) for r in plan)
    assert padded == sum(lengths)


def test_chunks() -> None:
    assert chunks(0, 4) == []
    assert chunks(10, 4) == [range(0, 4), range(4, 8), range(8, 10)]
    with pytest.raises(ValueError):
        chunks(3, 0)


# --- cache -----------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _vec(x: float) -> np.ndarray:
    return np.full(4, x, dtype=np.float32)


def test_cache_lru_and_ttl() -> None:
    clock = Clock()
    cache = VectorCache(2, ttl_s=10, clock=clock)
    cache.put("a", _vec(1))
    cache.put("b", _vec(2))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", _vec(3))  # evicts b
    assert cache.get("b") is None
    assert cache.get("a")[0] == 1  # type: ignore[index]
    clock.now = 10.0
    assert cache.get("a") is None  # expired
    assert len(cache) == 0  # c, stored at the same time, expired too
    assert (cache.hits, cache.misses) == (2, 2)
    off = VectorCache(0, ttl_s=1)
    off.put("a", _vec(1))
    assert off.get("a") is None


# --- batcher ---------------------------------------------------------------------------------
class Recorder:
    def __init__(self, delay: float = 0.0, fail_on: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.delay = delay
        self.fail_on = fail_on
        self.running = 0
        self.max_running = 0

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await asyncio.sleep(self.delay)
            if self.fail_on is not None and self.fail_on in items:
                raise ValueError(f"bad item {self.fail_on}")
            return [i * 10 for i in items]
        finally:
            self.running -= 1


async def test_items_submitted_together_share_a_batch() -> None:
    rec = Recorder()
    batcher = MicroBatcher(rec, max_size=8, max_wait_s=0)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(20)))
    assert results == [i * 10 for i in range(20)]
    assert [len(b) for b in rec.batches] == [8, 8, 4]
    assert sorted(i for b in rec.batches for i in b) == list(range(20))


async def test_idle_submit_is_flushed_without_waiting() -> None:
    rec = Recorder()
    batcher = MicroBatcher(rec, max_size=8, max_wait_s=0)
    assert await asyncio.wait_for(batcher.submit(1), timeout=5) == 10
    assert rec.batches == [[1]]


async def test_items_pile_up_while_the_slot_is_busy() -> None:
    rec = Recorder(delay=0.2)
    batcher = MicroBatcher(rec, max_size=64, max_wait_s=0, max_inflight=1)
    first = asyncio.create_task(batcher.submit(0))
    await asyncio.sleep(0.05)  # the first batch is in flight
    rest = [asyncio.create_task(batcher.submit(i)) for i in range(1, 11)]
    await asyncio.gather(first, *rest)
    assert rec.batches == [[0], list(range(1, 11))]
    assert rec.max_running == 1


async def test_partial_batch_leaves_after_max_wait() -> None:
    rec = Recorder()
    batcher = MicroBatcher(rec, max_size=100, max_wait_s=0.05)
    results = await asyncio.wait_for(asyncio.gather(*(batcher.submit(i) for i in range(3))), timeout=5)
    assert results == [0, 10, 20]
    assert rec.batches == [[0, 1, 2]]


async def test_inflight_limit_is_respected() -> None:
    rec = Recorder(delay=0.05)
    batcher = MicroBatcher(rec, max_size=2, max_wait_s=0, max_inflight=2)
    await asyncio.gather(*(batcher.submit(i) for i in range(12)))
    assert rec.max_running == 2
    assert batcher.items == 12


async def test_a_failed_batch_fails_each_of_its_items_only() -> None:
    rec = Recorder(fail_on=3)
    batcher = MicroBatcher(rec, max_size=4, max_wait_s=0)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(8)), return_exceptions=True)
    assert all(isinstance(r, ValueError) for r in results[:4])
    assert results[4:] == [40, 50, 60, 70]


async def test_close_flushes_what_is_queued() -> None:
    rec = Recorder(delay=0.05)
    batcher = MicroBatcher(rec, max_size=2, max_wait_s=10, max_inflight=1)
    tasks = [asyncio.create_task(batcher.submit(i)) for i in range(5)]
    await asyncio.sleep(0)
    await batcher.close()
    assert [t.result() for t in tasks] == [0, 10, 20, 30, 40]
    with pytest.raises(RuntimeError):
        await batcher.submit(9)


# --- inference gate ---------------------------------------------------------------------------
async def test_gate_lets_queries_overtake_waiting_jobs() -> None:
    gate = InferenceGate()
    order: list[str] = []
    await gate.acquire(urgent=False)  # a job batch is running

    async def take(name: str, urgent: bool) -> None:
        await gate.acquire(urgent)
        order.append(name)
        await asyncio.sleep(0)
        gate.release(urgent)

    job = asyncio.create_task(take("job", False))
    await asyncio.sleep(0)
    query = asyncio.create_task(take("query", True))
    cancelled = asyncio.create_task(take("cancelled", True))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    gate.release(False)
    await asyncio.gather(job, query)
    assert order == ["query", "job"]
    await asyncio.wait_for(gate.acquire(urgent=False), timeout=1)  # free again
    gate.release(False)


async def test_gate_gives_queries_every_slot_and_jobs_one() -> None:
    gate = InferenceGate(slots=2, job_slots=1)
    await gate.acquire(urgent=False)  # a job call runs
    await asyncio.wait_for(gate.acquire(urgent=True), timeout=1)  # a query takes the second slot at once
    second_job = asyncio.create_task(gate.acquire(urgent=False))
    third_query = asyncio.create_task(gate.acquire(urgent=True))
    await asyncio.sleep(0)
    assert not second_job.done() and not third_query.done()  # both slots busy
    gate.release(True)  # the query's slot: the waiting query goes first, the job waits
    await asyncio.sleep(0)
    assert third_query.done() and not second_job.done()
    gate.release(True)  # a slot frees, but the first job still runs: jobs keep to one slot
    await asyncio.sleep(0)
    assert not second_job.done()
    await asyncio.wait_for(gate.acquire(urgent=True), timeout=1)
    gate.release(True)
    gate.release(False)  # the first job ends: the second starts
    await asyncio.wait_for(second_job, timeout=1)
    gate.release(False)
    with pytest.raises(ValueError):
        InferenceGate(slots=1, job_slots=2)


async def test_inference_with_two_job_slots_runs_two_job_calls_at_once() -> None:
    """``job_slots=2``: two job calls run on the two inference threads together (each waits at a
    two-party barrier the other must reach); with the default one, the second waits its turn."""

    def meet(barrier: threading.Barrier) -> Callable[[list[str]], np.ndarray]:
        def fn(texts: list[str]) -> np.ndarray:
            barrier.wait(timeout=2)
            return np.zeros((len(texts), 2), dtype=np.float32)

        return fn

    both = Inference(slots=2, job_slots=2)
    try:
        barrier = threading.Barrier(2)
        got = await asyncio.gather(*(both.run(meet(barrier), ["a"], urgent=False) for _ in range(2)))
        assert [v.shape for v in got] == [(1, 2), (1, 2)]
    finally:
        both.shutdown()
    one = Inference(slots=2)
    try:
        with pytest.raises(threading.BrokenBarrierError):
            await asyncio.gather(*(one.run(meet(threading.Barrier(2)), ["a"], urgent=False) for _ in range(2)))
    finally:
        one.shutdown()
    capped = Inference(slots=1, job_slots=2)  # never more job calls than threads
    try:
        assert capped._gate.job_slots == 1
    finally:
        capped.shutdown()


def test_length_order_is_shortest_first_and_stable() -> None:
    assert length_order([100, 3, 12, 3, 100]) == [1, 3, 2, 0, 4]
    assert length_order([]) == []


def test_a_batch_writes_the_searched_signature_for_created_and_edited_memories_only() -> None:
    def state(i: int) -> MemoryState:
        return MemoryState(f"m{i}", "o", f"text {i}", f"h{i}", "local:m:3", True)

    states = [state(i) for i in range(4)]
    assert searched_too(states, {"m1", "m3", "elsewhere"}) == [1, 3]
    assert searched_too(states, set()) == []  # a batch of the reindex alone writes nothing twice


def test_same_vectors_is_a_difference_of_storage_only() -> None:
    assert same_vectors("local:m:384", "local:m:384:half")
    assert same_vectors("local:m:384:half", "local:m:384")
    assert not same_vectors("local:m:384", "local:m:384:dynamic-int8")
    assert not same_vectors("local:m:384:half", "remote:m:384:half")
