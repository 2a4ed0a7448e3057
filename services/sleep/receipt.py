"""Run status, per-phase results and the receipt of a sleep run.

Phase results are accumulators: a phase creates its result when it starts and fills the counters
as it goes; every counter has a default, so the `dream_runs` JSON carries every counter on every
path (ok, skipped, failed, aborted), and a phase that never ran is skipped with reason "not run".
Writes count applied decisions (non-keep conflict decisions, demotions), new edges, merges,
created patterns and refreshes. The run's status is `overall_status`; its receipt (`receipt`)
carries hash12, the first 12 hex digits of sha256 over the canonical JSON of the phase details.
"""

import hashlib
from collections.abc import Iterable
from typing import Final, Literal, Self

import msgspec

RunStatus = Literal["ok", "noop", "degraded", "refreshed", "aborted", "failed"]
PhaseStatus = Literal["ok", "degraded", "failed", "skipped", "aborted"]
RUN_STATUSES: Final = ("ok", "noop", "degraded", "refreshed", "aborted", "failed")
NOT_RUN: Final = "not run"
RECEIPT_PREFIX: Final = "memoryd:run"


class PhaseResult(msgspec.Struct, kw_only=True, rename="camel"):
    """Counters common to every phase; `batches` are LLM calls (0 for rule phases)."""

    status: PhaseStatus = "ok"
    reason: str = ""
    batches: int = 0
    batches_failed: int = 0

    @classmethod
    def skipped(cls, reason: str) -> Self:
        return cls(status="skipped", reason=reason)

    def single_batch_failed(self, exc: Exception) -> None:
        """A phase that asks the LLM once: that batch broke, so the phase failed, saying why."""
        self.batches_failed = 1
        self.status, self.reason = "failed", f"LLM batch failed: {exc}"[:500]

    def add(self, counts: Self) -> None:
        """Add the counters of ``counts`` (what a phase's pure plan counted) to this accumulator."""
        for name in counts.__struct_fields__:
            value = getattr(counts, name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, name, getattr(self, name) + value)

    def inputs(self) -> int:
        return 0

    def writes(self) -> int:
        return 0

    def refreshes(self) -> int:
        return 0


class ConflictResult(PhaseResult, kw_only=True, rename="camel"):
    """Applied decisions per action; `applyFailed` pairs were not recorded in the ledger.

    `crossScopePending`: pairs with a global memory queued for review; `frozen`: pairs parked
    for review by `conflictFreezeEnabled` without an LLM call (new entries counted in
    `conflict`); `updateCapSkipped`: updates past `reflectionUpdateMaxPerRun`, left for a later run.
    """

    candidates: int = 0
    below_threshold: int = 0
    missing: int = 0
    suppressed: int = 0
    ledger_skipped: int = 0
    dedupe_skipped: int = 0
    per_run_skipped: int = 0
    pairs: int = 0
    invalid: int = 0
    undecided: int = 0
    apply_failed: int = 0
    recorded: int = 0
    cross_scope_pending: int = 0
    frozen: int = 0
    update_cap_skipped: int = 0
    keep: int = 0
    merge: int = 0
    conflict: int = 0
    create: int = 0
    archive: int = 0
    update: int = 0
    supersede: int = 0
    differentiate: int = 0

    def inputs(self) -> int:
        return self.candidates

    def writes(self) -> int:
        decided = self.merge + self.conflict + self.create + self.archive + self.update + self.supersede
        return decided + self.differentiate + self.cross_scope_pending


class DemotionResult(PhaseResult, kw_only=True, rename="camel"):
    """`summarized`/`archived` count applied demotions; `recalledSkipped` failed the re-check."""

    scanned: int = 0
    global_skipped: int = 0
    summarized: int = 0
    archived: int = 0
    recalled_skipped: int = 0

    def inputs(self) -> int:
        return self.scanned

    def writes(self) -> int:
        return self.summarized + self.archived


class PatternResult(PhaseResult, kw_only=True, rename="camel"):
    pool: int = 0
    proposed: int = 0
    malformed: int = 0
    dropped_invalid: int = 0
    dropped_no_evidence: int = 0
    evidence_filtered: int = 0
    duplicate_title: int = 0
    cap_skipped: int = 0
    created: int = 0
    refreshed: int = 0
    unchanged: int = 0

    def inputs(self) -> int:
        return self.pool

    def writes(self) -> int:
        return self.created + self.refreshed

    def refreshes(self) -> int:
        return self.refreshed


class RelationResult(PhaseResult, kw_only=True, rename="camel"):
    entities: int = 0
    orphans: int = 0
    co_occurrences: int = 0
    unknown_entity: int = 0
    below_min: int = 0
    not_orphan: int = 0
    duplicate: int = 0
    capped: int = 0
    cycle_downgraded: int = 0
    created: int = 0

    def inputs(self) -> int:
        return self.entities

    def writes(self) -> int:
        return self.created


class AffectiveResult(PhaseResult, kw_only=True, rename="camel"):
    entities: int = 0
    candidates: int = 0
    malformed: int = 0
    dropped: int = 0
    fake_evidence: int = 0
    downgraded: int = 0
    merged: int = 0
    merge_unchanged: int = 0
    combined: int = 0
    created: int = 0
    cap_skipped: int = 0
    traits_cap_skipped: int = 0
    traits_created: int = 0
    traits_refreshed: int = 0
    traits_unchanged: int = 0
    promoted: int = 0

    def inputs(self) -> int:
        return self.candidates

    def writes(self) -> int:
        return self.created + self.merged + self.traits_created + self.refreshes()

    def refreshes(self) -> int:
        return self.merge_unchanged + self.traits_refreshed


class RunDetails(msgspec.Struct, kw_only=True):
    """The per-phase JSON of a `dream_runs` row, keyed by phase name."""

    conflict_resolution: ConflictResult = msgspec.field(default_factory=lambda: ConflictResult.skipped(NOT_RUN))
    archival_demotion: DemotionResult = msgspec.field(default_factory=lambda: DemotionResult.skipped(NOT_RUN))
    pattern_discovery: PatternResult = msgspec.field(default_factory=lambda: PatternResult.skipped(NOT_RUN))
    relation_completion: RelationResult = msgspec.field(default_factory=lambda: RelationResult.skipped(NOT_RUN))
    affective_attribution: AffectiveResult = msgspec.field(default_factory=lambda: AffectiveResult.skipped(NOT_RUN))

    def phases(self) -> list[PhaseResult]:
        return [
            self.conflict_resolution,
            self.archival_demotion,
            self.pattern_discovery,
            self.relation_completion,
            self.affective_attribution,
        ]


def phase_status(batches: int, batches_failed: int) -> PhaseStatus:
    """Status of an LLM phase from its batches: all broken -> failed, some -> degraded."""
    if batches > 0 and batches_failed >= batches:
        return "failed"
    return "degraded" if batches_failed > 0 else "ok"


def overall_status(phase_results: Iterable[PhaseResult], aborted: bool) -> RunStatus:
    """The run status; the first that applies wins: aborted (the run or a phase); failed
    (LLM batches were sent and every one broke, or every phase that ran failed); degraded (some
    batch broke, or some phase failed or is degraded); noop (nothing written or refreshed);
    refreshed (every write is a refresh); ok."""
    phases = list(phase_results)
    if aborted or any(p.status == "aborted" for p in phases):
        return "aborted"
    ran = [p for p in phases if p.status != "skipped"]
    batches = sum(p.batches for p in phases)
    broken = sum(p.batches_failed for p in phases)
    if batches > 0 and broken >= batches:
        return "failed"
    if ran and all(p.status == "failed" for p in ran):
        return "failed"
    if broken > 0 or any(p.status in ("failed", "degraded") for p in ran):
        return "degraded"
    writes = sum(p.writes() for p in phases)
    if writes == 0:
        return "noop"
    if writes == sum(p.refreshes() for p in phases):
        return "refreshed"
    return "ok"


def total_inputs(phase_results: Iterable[PhaseResult]) -> int:
    return sum(p.inputs() for p in phase_results)


def total_writes(phase_results: Iterable[PhaseResult]) -> int:
    return sum(p.writes() for p in phase_results)


def llm_used(phase_results: Iterable[PhaseResult]) -> bool:
    """True when any LLM call was made (even a failed one)."""
    return any(p.batches > 0 for p in phase_results)


class RunCounters(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Run-level totals (the `dream_runs.counters` column)."""

    inputs: int
    writes: int
    refreshes: int
    llm_batches: int
    llm_batches_failed: int


def run_counters(phase_results: Iterable[PhaseResult]) -> RunCounters:
    phases = list(phase_results)
    return RunCounters(
        inputs=total_inputs(phases),
        writes=total_writes(phases),
        refreshes=sum(p.refreshes() for p in phases),
        llm_batches=sum(p.batches for p in phases),
        llm_batches_failed=sum(p.batches_failed for p in phases),
    )


def canonical_json(value: object) -> bytes:
    """Deterministic JSON: keys sorted, no whitespace (msgspec Structs by their wire names)."""
    return msgspec.json.encode(value, order="sorted")


def details_hash12(value: object) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()[:12]


def receipt(
    run_id: str,
    status: str,
    inputs_digest_parts: object,
    inputs_count: int,
    writes_count: int,
    llm_used: bool,
) -> str:
    """`memoryd:run:<id>:<status>:<hash12>:<inputs>:<writes>:<0|1>` (eight segments)."""
    if not run_id or ":" in run_id:
        raise ValueError(f"run_id must be non-empty and without ':', got {run_id!r}")
    if status not in RUN_STATUSES:
        raise ValueError(f"unknown run status {status!r}; expected one of {RUN_STATUSES}")
    if inputs_count < 0 or writes_count < 0:
        raise ValueError("inputs_count and writes_count must be >= 0")
    digest = details_hash12(inputs_digest_parts)
    return f"{RECEIPT_PREFIX}:{run_id}:{status}:{digest}:{inputs_count}:{writes_count}:{int(llm_used)}"


class ReceiptParts(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    status: str
    hash12: str
    inputs: int
    writes: int
    llm_used: bool


def parse_receipt(text: str) -> ReceiptParts:
    """Split a receipt back into its parts; raises ValueError when it is not one."""
    parts = text.split(":")
    if len(parts) != 8 or parts[:2] != RECEIPT_PREFIX.split(":"):
        raise ValueError(f"not a memoryd run receipt: {text!r}")
    _, _, run_id, status, hash12, inputs, writes, llm = parts
    if status not in RUN_STATUSES or llm not in ("0", "1") or len(hash12) != 12:
        raise ValueError(f"not a memoryd run receipt: {text!r}")
    return ReceiptParts(
        run_id=run_id,
        status=status,
        hash12=hash12,
        inputs=int(inputs),
        writes=int(writes),
        llm_used=llm == "1",
    )


def run_receipt(run_id: str, details: RunDetails, aborted: bool) -> tuple[RunStatus, str]:
    """Status and receipt of a finished run, straight from its details."""
    phases = details.phases()
    status = overall_status(phases, aborted)
    text = receipt(run_id, status, details, total_inputs(phases), total_writes(phases), llm_used(phases))
    return status, text
