"""Run status precedence, counters present on every path, and the eight-segment receipt."""

import hashlib

import msgspec
import pytest

from services.sleep.receipt import (
    AffectiveResult,
    ConflictResult,
    DemotionResult,
    PatternResult,
    PhaseResult,
    RelationResult,
    RunDetails,
    canonical_json,
    overall_status,
    parse_receipt,
    phase_status,
    receipt,
    run_counters,
    run_receipt,
    total_inputs,
    total_writes,
)


def details(**phases: PhaseResult) -> RunDetails:
    return RunDetails(**phases)  # type: ignore[arg-type]


def test_skipped_result_carries_every_counter() -> None:
    encoded = msgspec.to_builtins(ConflictResult.skipped("no llm route"))
    assert encoded["status"] == "skipped"
    assert encoded["reason"] == "no llm route"
    for counter in ("pairs", "batches", "batchesFailed", "suppressed", "ledgerSkipped",
                    "perRunSkipped", "invalid", "merge", "differentiate"):  # fmt: skip
        assert encoded[counter] == 0


def test_every_phase_of_a_fresh_run_is_recorded_with_all_counters() -> None:
    encoded = msgspec.json.decode(msgspec.json.encode(RunDetails()))
    assert list(encoded) == [
        "conflict_resolution",
        "archival_demotion",
        "pattern_discovery",
        "relation_completion",
        "affective_attribution",
    ]
    assert encoded["affective_attribution"]["status"] == "skipped"
    assert encoded["affective_attribution"]["reason"] == "not run"
    assert encoded["affective_attribution"]["downgraded"] == 0
    assert encoded["archival_demotion"]["recalledSkipped"] == 0


def test_failed_conflict_phase_still_reports_pairs_and_batches() -> None:
    result = ConflictResult(status="failed", reason="llm 503", pairs=24, batches=2, batches_failed=2)
    encoded = msgspec.to_builtins(result)
    assert (encoded["pairs"], encoded["batches"], encoded["batchesFailed"]) == (24, 2, 2)


@pytest.mark.parametrize(
    ("batches", "failed", "status"), [(0, 0, "ok"), (3, 0, "ok"), (3, 1, "degraded"), (3, 3, "failed")]
)
def test_phase_status_from_batches(batches: int, failed: int, status: str) -> None:
    assert phase_status(batches, failed) == status


def test_aborted_wins_even_with_nothing_written_or_everything_broken() -> None:
    nothing = details(archival_demotion=DemotionResult(scanned=3))
    broken = details(conflict_resolution=ConflictResult(status="failed", batches=2, batches_failed=2))
    assert overall_status(nothing.phases(), aborted=True) == "aborted"
    assert overall_status(broken.phases(), aborted=True) == "aborted"
    marked = details(pattern_discovery=PatternResult(status="aborted"))
    assert overall_status(marked.phases(), aborted=False) == "aborted"


def test_all_llm_batches_broken_is_failed_even_when_demotion_wrote() -> None:
    run = details(
        conflict_resolution=ConflictResult(status="failed", batches=3, batches_failed=3),
        archival_demotion=DemotionResult(scanned=10, summarized=4),
        pattern_discovery=PatternResult(status="failed", batches=1, batches_failed=1),
    )
    assert overall_status(run.phases(), aborted=False) == "failed"


def test_some_batches_broken_is_degraded() -> None:
    run = details(
        conflict_resolution=ConflictResult(status="degraded", batches=3, batches_failed=1, merge=2),
        archival_demotion=DemotionResult(),
    )
    assert overall_status(run.phases(), aborted=False) == "degraded"


def test_every_ran_phase_failed_is_failed_and_one_failed_rule_phase_is_degraded() -> None:
    all_failed = details(archival_demotion=DemotionResult(status="failed", reason="db down"))
    assert overall_status(all_failed.phases(), aborted=False) == "failed"
    one_failed = details(
        archival_demotion=DemotionResult(summarized=1),
        relation_completion=RelationResult(status="failed", reason="boom"),
    )
    assert overall_status(one_failed.phases(), aborted=False) == "degraded"


def test_nothing_written_is_noop_and_keeps_are_not_writes() -> None:
    run = details(
        conflict_resolution=ConflictResult(pairs=4, batches=1, keep=4),
        archival_demotion=DemotionResult(scanned=50),
    )
    assert overall_status(run.phases(), aborted=False) == "noop"
    assert total_writes(run.phases()) == 0


def test_no_llm_run_is_recorded_with_demotion_only() -> None:
    run = details(
        conflict_resolution=ConflictResult.skipped("no llm route"),
        archival_demotion=DemotionResult(scanned=7, archived=2),
        pattern_discovery=PatternResult.skipped("no llm route"),
        relation_completion=RelationResult(entities=3),
        affective_attribution=AffectiveResult.skipped("disabled"),
    )
    status, text = run_receipt("r1", run, aborted=False)
    assert status == "ok"
    assert text.endswith(":10:2:0")


def test_only_refreshes_is_refreshed_not_ok() -> None:
    affect = AffectiveResult(batches=1, candidates=3, merge_unchanged=2, traits_refreshed=1)
    run = details(affective_attribution=affect, archival_demotion=DemotionResult())
    assert overall_status(run.phases(), aborted=False) == "refreshed"
    assert total_writes(run.phases()) == 3
    pattern_only = details(pattern_discovery=PatternResult(batches=1, refreshed=2, unchanged=2))
    assert overall_status(pattern_only.phases(), aborted=False) == "refreshed"


def test_a_real_write_next_to_refreshes_is_ok() -> None:
    run = details(
        pattern_discovery=PatternResult(batches=1, refreshed=1),
        relation_completion=RelationResult(created=1),
    )
    assert overall_status(run.phases(), aborted=False) == "ok"


def test_writes_count_decisions_edges_merges_and_refreshes() -> None:
    phases = [
        ConflictResult(keep=5, merge=1, update=1, differentiate=1, conflict=1),
        DemotionResult(summarized=2, archived=1),
        PatternResult(created=1, refreshed=2),
        RelationResult(created=3),
        AffectiveResult(created=1, merged=2, merge_unchanged=1, traits_created=1, traits_refreshed=1),
    ]
    assert [p.writes() for p in phases] == [4, 3, 3, 3, 6]
    assert total_writes(phases) == 19


def test_inputs_sum_the_phase_inputs() -> None:
    phases = [
        ConflictResult(candidates=8),
        DemotionResult(scanned=100),
        PatternResult(pool=120),
        RelationResult(entities=9),
        AffectiveResult(candidates=4),
    ]
    assert total_inputs(phases) == 241


def test_receipt_has_eight_segments_and_hash_over_canonical_details() -> None:
    run = details(archival_demotion=DemotionResult(scanned=12, summarized=3))
    text = receipt("0f3a", "ok", run, 12, 3, True)
    segments = text.split(":")
    assert len(segments) == 8
    assert segments[:4] == ["memoryd", "run", "0f3a", "ok"]
    assert segments[5:] == ["12", "3", "1"]
    expected = hashlib.sha256(canonical_json(run)).hexdigest()[:12]
    assert segments[4] == expected
    assert len(expected) == 12
    assert int(expected, 16) >= 0


def test_canonical_json_sorts_keys_and_ignores_insertion_order() -> None:
    assert canonical_json({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'
    assert receipt("r", "noop", {"x": 1, "y": 2}, 0, 0, False) == receipt("r", "noop", {"y": 2, "x": 1}, 0, 0, False)
    assert receipt("r", "noop", {"x": 1}, 0, 0, False) != receipt("r", "noop", {"x": 2}, 0, 0, False)


def test_receipt_roundtrips_through_parse() -> None:
    text = receipt("run-42", "degraded", {"k": 1}, 30, 4, False)
    parts = parse_receipt(text)
    assert (parts.run_id, parts.status, parts.inputs, parts.writes, parts.llm_used) == (
        "run-42",
        "degraded",
        30,
        4,
        False,
    )
    assert text.startswith("memoryd:run:run-42:degraded:")


@pytest.mark.parametrize(
    ("run_id", "status", "inputs", "writes"),
    [("a:b", "ok", 0, 0), ("", "ok", 0, 0), ("r", "great", 0, 0), ("r", "ok", -1, 0)],
)
def test_receipt_rejects_what_would_break_the_format(run_id: str, status: str, inputs: int, writes: int) -> None:
    with pytest.raises(ValueError):
        receipt(run_id, status, {}, inputs, writes, False)


def test_parse_receipt_rejects_other_strings() -> None:
    with pytest.raises(ValueError):
        parse_receipt("memoryd:run:r:ok:abc:1:2")


def test_run_counters_total_the_phases() -> None:
    run = details(
        conflict_resolution=ConflictResult(candidates=5, batches=2, batches_failed=1, merge=1),
        pattern_discovery=PatternResult(pool=100, batches=1, refreshed=1),
    )
    assert msgspec.to_builtins(run_counters(run.phases())) == {
        "inputs": 105,
        "writes": 2,
        "refreshes": 1,
        "llmBatches": 3,
        "llmBatchesFailed": 1,
    }
