"""Conflict pair selection: threshold, suppression, ledger, one pair per memory, caps, batches;
where an incremental scan may start."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from services.sleep.logic.conflict_pairs import (
    CandidatePair,
    PairMemory,
    PairSelection,
    ScanRecord,
    incremental_since,
    normalise_pair,
    same_agent,
    select_pairs,
)

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def mem(memory_id: str, updated: datetime = T0, content_hash: str | None = None) -> PairMemory:
    return PairMemory(id=memory_id, updated_at=updated, content_hash=content_hash or f"h-{memory_id}")


def memories(*ids: str) -> dict[str, PairMemory]:
    return {i: mem(i) for i in ids}


def select(
    candidates: list[CandidatePair],
    mems: dict[str, PairMemory],
    *,
    differentiated: dict[tuple[str, str], tuple[str, str]] | None = None,
    ledger: dict[tuple[str, str], datetime] | None = None,
    threshold: float = 0.85,
    per_run: int = 60,
    per_batch: int = 12,
) -> PairSelection:
    return select_pairs(
        candidates,
        mems,
        differentiated or {},
        ledger or {},
        threshold=threshold,
        max_pairs_per_run=per_run,
        max_pairs_per_batch=per_batch,
    )


def keys(selection: PairSelection) -> list[tuple[str, str]]:
    return [p.key for batch in selection.batches for p in batch]


def test_normalise_pair_sorts_and_rejects_self_pairs() -> None:
    assert normalise_pair("b", "a") == ("a", "b")
    assert normalise_pair("a", "b") == ("a", "b")
    with pytest.raises(ValueError, match="distinct"):
        normalise_pair("a", "a")


def test_threshold_is_inclusive_and_counts_the_rest() -> None:
    sel = select(
        [CandidatePair("a", "b", 0.85), CandidatePair("c", "d", 0.8499)],
        memories("a", "b", "c", "d"),
    )
    assert keys(sel) == [("a", "b")]
    assert sel.counts.candidates == 2
    assert sel.counts.below_threshold == 1


def test_both_directions_and_self_hits_fold_into_one_pair() -> None:
    sel = select(
        [
            CandidatePair("b", "a", 0.90),
            CandidatePair("a", "b", 0.93),
            CandidatePair("a", "a", 1.0),
        ],
        memories("a", "b"),
    )
    assert sel.counts.candidates == 1
    assert [(p.a_id, p.b_id, p.similarity) for p in sel.batches[0]] == [("a", "b", 0.93)]


def test_differentiated_pair_with_unchanged_hashes_is_suppressed() -> None:
    sel = select(
        [CandidatePair("a", "b", 0.95)],
        memories("a", "b"),
        differentiated={("a", "b"): ("h-a", "h-b")},
    )
    assert keys(sel) == []
    assert sel.counts.suppressed == 1


def test_differentiated_row_stored_reversed_still_matches() -> None:
    sel = select(
        [CandidatePair("a", "b", 0.95)],
        memories("a", "b"),
        differentiated={("b", "a"): ("h-b", "h-a")},
    )
    assert sel.counts.suppressed == 1


def test_differentiated_pair_with_a_changed_hash_comes_back() -> None:
    mems = {"a": mem("a", content_hash="h-a-edited"), "b": mem("b")}
    sel = select([CandidatePair("a", "b", 0.95)], mems, differentiated={("a", "b"): ("h-a", "h-b")})
    assert keys(sel) == [("a", "b")]
    assert sel.counts.suppressed == 0


def test_ledger_skips_pair_when_neither_side_updated_after_judged_at() -> None:
    judged = T0 + timedelta(hours=1)
    mems = {"a": mem("a", T0), "b": mem("b", judged)}  # equal to judged_at is not after
    sel = select([CandidatePair("a", "b", 0.9)], mems, ledger={("b", "a"): judged})
    assert keys(sel) == []
    assert sel.counts.ledger_skipped == 1


def test_ledger_pair_is_rejudged_when_one_side_updated_after_judged_at() -> None:
    judged = T0 + timedelta(hours=1)
    mems = {"a": mem("a", T0), "b": mem("b", judged + timedelta(microseconds=1))}
    sel = select([CandidatePair("a", "b", 0.9)], mems, ledger={("a", "b"): judged})
    assert keys(sel) == [("a", "b")]
    assert sel.counts.ledger_skipped == 0


def test_ledger_skip_happens_before_the_one_pair_per_memory_dedupe() -> None:
    # (a,b) is the best pair but already judged: (a,c) must get its chance instead of
    # being eaten by a pair that will never be sent.
    sel = select(
        [CandidatePair("a", "b", 0.99), CandidatePair("a", "c", 0.90)],
        memories("a", "b", "c"),
        ledger={("a", "b"): T0 + timedelta(days=1)},
    )
    assert keys(sel) == [("a", "c")]
    assert sel.counts.ledger_skipped == 1
    assert sel.counts.dedupe_skipped == 0


def test_one_pair_per_memory_highest_similarity_first() -> None:
    sel = select(
        [
            CandidatePair("a", "b", 0.90),
            CandidatePair("a", "c", 0.97),
            CandidatePair("b", "c", 0.95),
            CandidatePair("b", "d", 0.88),
            CandidatePair("e", "f", 0.86),
        ],
        memories("a", "b", "c", "d", "e", "f"),
    )
    assert keys(sel) == [("a", "c"), ("b", "d"), ("e", "f")]
    assert sel.counts.dedupe_skipped == 2
    assert sel.counts.pairs == 3
    assert [(p.a_id, p.b_id, p.similarity) for p in sel.leftovers] == [("b", "c", 0.95), ("a", "b", 0.90)]


def test_similarity_ties_break_by_ids_deterministically() -> None:
    cands = [CandidatePair("c", "a", 0.9), CandidatePair("b", "a", 0.9)]
    first = select(cands, memories("a", "b", "c"))
    second = select(list(reversed(cands)), memories("a", "b", "c"))
    assert keys(first) == keys(second) == [("a", "b")]


def test_unknown_memory_is_dropped_and_counted() -> None:
    sel = select([CandidatePair("a", "gone", 0.9)], memories("a"))
    assert keys(sel) == []
    assert sel.counts.missing == 1


def test_per_run_cap_counts_leftovers_and_batches_split_the_rest() -> None:
    cands = [CandidatePair(f"m{i:02d}a", f"m{i:02d}b", 0.99 - i / 1000) for i in range(10)]
    mems = {m: mem(m) for c in cands for m in (c.a_id, c.b_id)}
    sel = select(cands, mems, per_run=7, per_batch=3)
    assert sel.counts.pairs == 7
    assert sel.counts.per_run_skipped == 3
    assert [len(b) for b in sel.batches] == [3, 3, 1]
    assert keys(sel)[0] == ("m00a", "m00b")
    assert keys(sel)[-1] == ("m06a", "m06b")
    assert [p.key for p in sel.leftovers] == [("m07a", "m07b"), ("m08a", "m08b"), ("m09a", "m09b")]


def test_zero_caps_mean_unlimited() -> None:
    cands = [CandidatePair(f"x{i}", f"y{i}", 0.9) for i in range(20)]
    mems = {m: mem(m) for c in cands for m in (c.a_id, c.b_id)}
    sel = select(cands, mems, per_run=0, per_batch=0)
    assert sel.counts.pairs == 20
    assert sel.counts.per_run_skipped == 0
    assert [len(b) for b in sel.batches] == [20]


def test_nothing_selected_gives_no_batches() -> None:
    sel = select([], {})
    assert sel.batches == ()
    assert (sel.counts.candidates, sel.counts.pairs) == (0, 0)


def test_selected_pair_carries_hashes_and_updated_at_in_normalised_order() -> None:
    mems = {"a": mem("a", T0), "b": mem("b", T0 + timedelta(days=1))}
    (pair,) = select([CandidatePair("b", "a", 0.9)], mems).batches[0]
    assert (pair.a_id, pair.b_id) == ("a", "b")
    assert (pair.a_hash, pair.b_hash) == ("h-a", "h-b")
    assert (pair.a_updated_at, pair.b_updated_at) == (T0, T0 + timedelta(days=1))


def test_string_order_of_canonical_uuids_is_postgres_uuid_order() -> None:
    ids = [uuid.UUID(int=n) for n in (0xA0 << 120, 0x0F << 120, 1, 0xFFFF)]
    ids += [uuid.uuid4() for _ in range(50)]
    by_bytes = sorted(ids, key=lambda u: u.bytes)
    assert sorted(str(u) for u in ids) == [str(u) for u in by_bytes]
    low, high = by_bytes[0], by_bytes[-1]
    assert normalise_pair(str(high), str(low)) == (str(low), str(high))


# --- incremental scans -------------------------------------------------------------------
SCAN_NOW = datetime(2026, 3, 1, tzinfo=UTC)
WEEK = timedelta(days=7)


def scan(hours_ago: float, since_hours_ago: float | None, threshold: float = 0.85) -> ScanRecord:
    since = None if since_hours_ago is None else SCAN_NOW - timedelta(hours=since_hours_ago)
    return ScanRecord(started_at=SCAN_NOW - timedelta(hours=hours_ago), since=since, threshold=threshold)


def test_no_complete_scan_means_a_full_scan() -> None:
    assert incremental_since([], now=SCAN_NOW, threshold=0.85, full_every=WEEK) is None


def test_a_chain_back_to_a_recent_full_scan_starts_at_the_newest_scan() -> None:
    scans = [scan(8, 16), scan(16, 30), scan(30, None)]
    assert incremental_since(scans, now=SCAN_NOW, threshold=0.85, full_every=WEEK) == SCAN_NOW - timedelta(hours=8)


def test_an_old_full_scan_or_another_threshold_forces_a_full_scan() -> None:
    old_full = [scan(8, 200), scan(200, None)]
    assert incremental_since(old_full, now=SCAN_NOW, threshold=0.85, full_every=WEEK) is None
    other_threshold = [scan(8, 30), scan(30, None, threshold=0.92)]
    assert incremental_since(other_threshold, now=SCAN_NOW, threshold=0.85, full_every=WEEK) is None
    assert incremental_since([scan(8, None)], now=SCAN_NOW, threshold=0.75, full_every=WEEK) is None


def test_pairs_stay_within_one_agent() -> None:
    mems = {
        "a1": PairMemory(id="a1", updated_at=T0, content_hash="h1", agent_id="coder"),
        "a2": PairMemory(id="a2", updated_at=T0, content_hash="h2", agent_id="coder"),
        "b1": PairMemory(id="b1", updated_at=T0, content_hash="h3", agent_id="travel"),
        "n1": mem("n1"),
        "n2": mem("n2"),
    }
    pairs = [
        CandidatePair("a1", "a2", 0.99),
        CandidatePair("a1", "b1", 0.99),
        CandidatePair("n1", "a1", 0.99),
        CandidatePair("n1", "n2", 0.99),
        CandidatePair("a2", "gone", 0.99),
    ]
    kept = same_agent(pairs, mems)
    assert [(c.a_id, c.b_id) for c in kept] == [("a1", "a2"), ("n1", "n2"), ("a2", "gone")]
