"""Conflict resolution, part 1: which candidate pairs go to the LLM, in which batches.

Input: candidate pairs from the vector index (both directions and self-matches are folded), each
memory's `updated_at` and `content_hash`, the `differentiated_pairs` rows and the
`conflict_reviewed` ledger; `select_pairs` filters them step by step, counting each step. Pairs
are always in normalised (sorted) order, the order of every ledger and differentiated row; ids
are canonical lowercase uuid strings, whose string order is Postgres' uuid order, so
`CHECK (memory_a < memory_b)` holds.
"""

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta

import msgspec

from services.sleep.receipt import ConflictResult

PairKey = tuple[str, str]


def normalise_pair(a: str, b: str) -> PairKey:
    """The canonical (sorted) order of a pair; a memory never pairs with itself."""
    if a == b:
        raise ValueError(f"a pair needs two distinct memories, got {a!r} twice")
    return (a, b) if a < b else (b, a)


class CandidatePair(msgspec.Struct, frozen=True):
    """One hit of the vector index: two memory ids of the same owner and their similarity."""

    a_id: str
    b_id: str
    similarity: float


class PairMemory(msgspec.Struct, frozen=True, kw_only=True):
    """What selection needs of one memory."""

    id: str
    updated_at: datetime
    content_hash: str
    agent_id: str | None = None


class ConflictPair(msgspec.Struct, frozen=True, kw_only=True):
    """A selected pair in normalised order (a_id < b_id) with what the decisions need."""

    a_id: str
    b_id: str
    similarity: float
    a_updated_at: datetime
    b_updated_at: datetime
    a_hash: str
    b_hash: str

    @property
    def key(self) -> PairKey:
        return (self.a_id, self.b_id)


class PairSelection(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Selected pairs split into batches, with a counter for every step."""

    batches: tuple[tuple[ConflictPair, ...], ...]
    #: candidates, below_threshold, missing, suppressed, ledger_skipped, dedupe_skipped,
    #: per_run_skipped, pairs: the phase's receipt counters, filled here
    counts: ConflictResult
    #: Pairs that passed every filter but wait for a later run: lost to the one-pair-per-memory
    #: rule or past the per-run cap (the caller may keep them for the next run).
    leftovers: tuple[ConflictPair, ...] = ()


def _fold_candidates(candidates: Iterable[CandidatePair]) -> dict[PairKey, float]:
    best: dict[PairKey, float] = {}
    for cand in candidates:
        if cand.a_id == cand.b_id or cand.similarity != cand.similarity:  # self or NaN
            continue
        key = normalise_pair(cand.a_id, cand.b_id)
        if key not in best or cand.similarity > best[key]:
            best[key] = cand.similarity
    return best


def _normalised_differentiated(
    rows: Mapping[PairKey, tuple[str, str]],
) -> dict[PairKey, tuple[str, str]]:
    out: dict[PairKey, tuple[str, str]] = {}
    for (a, b), (hash_a, hash_b) in rows.items():
        out[normalise_pair(a, b)] = (hash_a, hash_b) if a < b else (hash_b, hash_a)
    return out


def _chunks(pairs: list[ConflictPair], size: int) -> tuple[tuple[ConflictPair, ...], ...]:
    if not pairs:
        return ()
    if size <= 0:
        return (tuple(pairs),)
    return tuple(tuple(pairs[i : i + size]) for i in range(0, len(pairs), size))


def select_pairs(
    candidates: Iterable[CandidatePair],
    memories: Mapping[str, PairMemory],
    differentiated: Mapping[PairKey, tuple[str, str]],
    ledger: Mapping[PairKey, datetime],
    *,
    threshold: float,
    max_pairs_per_run: int,
    max_pairs_per_batch: int,
) -> PairSelection:
    """Select and batch candidate pairs; each step's losers are counted.

    In order: similarity at or above ``threshold``; a differentiated pair with both hashes
    unchanged is dropped (`suppressed`); a reviewed pair neither of whose memories was updated
    after `judged_at` (`ledgerSkipped`); one pair per memory, greedy by similarity, ties by
    ids (`dedupeSkipped`); the per-run cap, 0 = unlimited (`perRunSkipped`); batches of
    ``max_pairs_per_batch`` (0 = one batch). A pair with an unknown memory is dropped
    (`missing`); the losers of the last two filters are `leftovers` for the next run.

    `differentiated` maps a pair to the two hashes recorded with it (in the pair's order);
    `ledger` maps a pair to its `judged_at`. Keys may come in either order.
    """
    folded = _fold_candidates(candidates)
    diff = _normalised_differentiated(differentiated)
    judged = {normalise_pair(a, b): at for (a, b), at in ledger.items()}
    counts = dict.fromkeys(("below_threshold", "missing", "suppressed", "ledger_skipped", "dedupe_skipped"), 0)
    survivors: list[ConflictPair] = []
    for (a, b), similarity in folded.items():
        if similarity < threshold:
            counts["below_threshold"] += 1
            continue
        mem_a, mem_b = memories.get(a), memories.get(b)
        if mem_a is None or mem_b is None:
            counts["missing"] += 1
            continue
        if diff.get((a, b)) == (mem_a.content_hash, mem_b.content_hash):
            counts["suppressed"] += 1
            continue
        judged_at = judged.get((a, b))
        if judged_at is not None and mem_a.updated_at <= judged_at and mem_b.updated_at <= judged_at:
            counts["ledger_skipped"] += 1
            continue
        survivors.append(
            ConflictPair(
                a_id=a,
                b_id=b,
                similarity=similarity,
                a_updated_at=mem_a.updated_at,
                b_updated_at=mem_b.updated_at,
                a_hash=mem_a.content_hash,
                b_hash=mem_b.content_hash,
            )
        )
    survivors.sort(key=lambda p: (-p.similarity, p.a_id, p.b_id))
    used: set[str] = set()
    chosen: list[ConflictPair] = []
    leftovers: list[ConflictPair] = []
    for pair in survivors:
        if pair.a_id in used or pair.b_id in used:
            counts["dedupe_skipped"] += 1
            leftovers.append(pair)
            continue
        used.update(pair.key)
        chosen.append(pair)
    per_run_skipped = 0
    if max_pairs_per_run > 0 and len(chosen) > max_pairs_per_run:
        per_run_skipped = len(chosen) - max_pairs_per_run
        leftovers.extend(chosen[max_pairs_per_run:])
        chosen = chosen[:max_pairs_per_run]
    return PairSelection(
        batches=_chunks(chosen, max_pairs_per_batch),
        counts=ConflictResult(
            candidates=len(folded),
            per_run_skipped=per_run_skipped,
            pairs=len(chosen),
            below_threshold=counts["below_threshold"],
            missing=counts["missing"],
            suppressed=counts["suppressed"],
            ledger_skipped=counts["ledger_skipped"],
            dedupe_skipped=counts["dedupe_skipped"],
        ),
        leftovers=tuple(leftovers),
    )


class ScanRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A finished scan whose every candidate pair was judged or kept for a later run."""

    started_at: datetime
    since: datetime | None  # None: a full scan
    threshold: float


def incremental_since(
    complete_scans: Iterable[ScanRecord], *, now: datetime, threshold: float, full_every: timedelta
) -> datetime | None:
    """Where the next scan may start: only memories changed since then need to probe.

    `complete_scans` are newest first. Walking back from the newest, every complete scan
    must have used the same threshold until a full scan is reached, no older than
    `full_every`; then pairs among memories unchanged since the newest complete scan
    were all judged already, and the scan starts at its start time. Otherwise (no such
    chain): None, a full scan.
    """
    newest: datetime | None = None
    for scan in complete_scans:
        if scan.threshold != threshold:
            return None
        if newest is None:
            newest = scan.started_at
        if scan.since is None:
            return newest if now - scan.started_at <= full_every else None
    return None


def cross_scope_pairs(
    candidates: Iterable[CandidatePair], own: Collection[str], global_ids: Collection[str], *, threshold: float
) -> list[PairKey]:
    """Pairs of one of the owner's memories and a global one at or above the threshold.

    An owner's run never changes a global memory, so these skip the LLM and the ledger and
    go to the human review queue (`conflict_pending`) instead; normalised, each once, sorted.
    """
    found: set[PairKey] = set()
    for c in candidates:
        if c.a_id == c.b_id or c.similarity < threshold:
            continue
        ids = {c.a_id, c.b_id}
        if len(ids & set(global_ids)) == 1 and len(ids & set(own)) == 1:
            found.add(normalise_pair(c.a_id, c.b_id))
    return sorted(found)


def same_agent(candidates: Iterable[CandidatePair], memories: Mapping[str, PairMemory]) -> list[CandidatePair]:
    """The pairs whose memories belong to the same agent (or both to none): merging two agents'
    memories would take one from the agent that held it. A pair with a memory not in
    ``memories`` stays (selection drops it with its own count)."""
    kept = []
    for c in candidates:
        a, b = memories.get(c.a_id), memories.get(c.b_id)
        if a is None or b is None or a.agent_id == b.agent_id:
            kept.append(c)
    return kept
