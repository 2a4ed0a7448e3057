"""Every rule that docs/sleep.md lists is checked by tests that exist: ``RULES`` maps each rule to them."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: rule (as docs/sleep.md words it) -> the tests that check it
RULES: dict[str, tuple[str, ...]] = {
    "nothing is scheduled unless `sleepModeEnabled`": (
        "tests/integration/sleep/test_scheduler.py::test_nothing_is_scheduled_by_default",
    ),
    "due when idle `sleepIdleMinutes` and the interval passed; re-armed otherwise": (
        "tests/unit/sleep/test_scheduler.py::test_due_when_idle_and_interval_elapsed_exactly",
        "tests/unit/sleep/test_scheduler.py::test_not_idle_rearms_at_end_of_idle_window",
        "tests/unit/sleep/test_scheduler.py::test_too_soon_rearms_at_last_run_plus_interval",
    ),
    "several schedulers book a due run once": (
        "tests/integration/sleep/test_scheduler.py::test_idle_enabled_owners_are_booked_once_by_concurrent_schedulers",
        "tests/unit/sleep/test_scheduler.py::test_slot_and_msg_id_are_identical_for_every_scheduler",
    ),
    "backoff doubles per failure, capped at max(interval, 24 h)": (
        "tests/unit/sleep/test_scheduler.py::test_backoff_doubles_per_failure_and_caps_at_24h",
        "tests/integration/sleep/test_scheduler.py::test_interval_and_failure_backoff_come_from_the_run_history",
    ),
    "only `failed` counts; `noop` and `aborted` end the streak": (
        "tests/unit/sleep/test_scheduler.py::test_only_failed_counts_and_noop_or_aborted_ends_the_streak",
        "tests/integration/sleep/test_scheduler.py::test_interval_and_failure_backoff_come_from_the_run_history",
    ),
    "runs left by a killed worker do not add to the backoff": (
        "tests/unit/sleep/test_scheduler.py::test_runs_of_a_killed_worker_neither_count_nor_end_the_streak",
    ),
    "an aborted run does not hold the next one off for the interval": (
        "tests/unit/sleep/test_scheduler.py::test_an_aborted_run_does_not_hold_off_the_next_for_the_interval",
        "tests/integration/sleep/test_scheduler.py::test_interval_and_failure_backoff_come_from_the_run_history",
    ),
    "a stale scheduled job is dropped": (
        "tests/integration/sleep/test_scheduler.py::test_a_job_whose_slot_is_no_longer_current_is_dropped",
    ),
    "idle is re-checked when a scheduled run starts": (
        "tests/integration/sleep/test_activity.py::test_a_scheduled_run_rechecks_idle_when_it_starts",
        "tests/unit/sleep/test_scheduler.py::test_idle_is_rechecked_with_the_idle_minutes",
    ),
    "reads count as activity only with `sleepCountReads`": (
        "tests/integration/sleep/test_activity.py::test_reads_count_as_activity_only_with_sleep_count_reads",
        "tests/integration/sleep/test_activity.py::test_a_retrieval_announces_a_read_of_its_owner",
    ),
    "a manual run with sleep mode off runs and says so": (
        "tests/integration/sleep/test_spec_rules.py::test_a_manual_run_with_sleep_mode_off_runs_and_says_so",
    ),
    "at limit 1, runs are serial across replicas": (
        "tests/integration/sleep/test_serial.py::test_at_limit_one_three_replicas_never_overlap",
    ),
    "never two runs of one owner; at most `sleepMaxConcurrentRuns` at once; none lost or run twice": (
        "tests/integration/sleep/test_serial.py::test_at_limit_four_three_processes_two_hundred_runs_and_a_killed_worker",
    ),
    "a killed worker leaves no stuck lock; its run is redone or closed by another": (
        "tests/integration/sleep/test_serial.py::test_at_limit_four_three_processes_two_hundred_runs_and_a_killed_worker",
        "tests/integration/sleep/test_runs.py::test_bad_stored_settings_fail_the_run_and_orphaned_runs_are_closed",
    ),
    "a stopping worker requeues its run": (
        "tests/integration/sleep/test_boundaries.py::test_a_stopping_worker_requeues_its_run_and_another_finishes_it",
    ),
    "owner activity aborts at the next boundary (status `aborted`, never `noop`)": (
        "tests/integration/sleep/test_boundaries.py::test_owner_activity_aborts_the_run_at_the_next_boundary",
        "tests/unit/sleep/test_receipt.py::test_aborted_wins_even_with_nothing_written_or_everything_broken",
    ),
    "activity during an LLM call cancels it and is recorded": (
        "tests/integration/sleep/test_activity.py::test_activity_during_an_llm_call_cancels_it_and_aborts_the_run",
    ),
    "each phase in its own error boundary": (
        "tests/integration/sleep/test_boundaries.py::test_a_500_from_the_llm_skips_only_that_phase",
    ),
    "without an LLM the LLM phases skip, demotion runs": (
        "tests/integration/sleep/test_runs.py::test_without_llm_demotion_runs_llm_phases_skip_and_the_run_is_recorded",
    ),
    "`sleepModel`, `sleepProvider`, `sleepReasoningEffort` pick the LLM route": (
        "tests/integration/sleep/test_spec_rules.py::test_sleep_model_provider_and_reasoning_effort_reach_the_llm",
        "tests/unit/sleep/test_settings.py::test_the_llm_route_comes_from_sleep_model_provider_and_effort",
    ),
    "imported memories take part in no phase": (
        "tests/integration/sleep/test_spec_rules.py::test_imported_memories_take_part_in_no_phase",
    ),
    "an owner's run reads and writes only its owner; global memories are never modified": (
        "tests/integration/sleep/test_isolation.py::test_a_run_reads_and_writes_only_its_owner",
        "tests/integration/sleep/test_conflict_rules.py::test_global_memories_and_other_owners_never_pair",
    ),
    "conflict: threshold by strictness (gentle 0.92, normal 0.85, aggressive 0.75)": (
        "tests/unit/sleep/test_settings.py::test_strictness_threshold",
        "tests/unit/sleep/test_conflict_selection.py::test_threshold_is_inclusive_and_counts_the_rest",
    ),
    "conflict: differentiated pairs with unchanged hashes are skipped": (
        "tests/unit/sleep/test_conflict_selection.py::test_differentiated_pair_with_unchanged_hashes_is_suppressed",
        "tests/integration/sleep/test_conflict_rules.py::test_full_set_supersedes_and_differentiates_and_a_differentiated_pair_is_suppressed",
    ),
    "conflict: judged pairs are skipped until a side changes": (
        "tests/unit/sleep/test_conflict_selection.py::test_ledger_skips_pair_when_neither_side_updated_after_judged_at",
        "tests/integration/sleep/test_conflict.py::test_second_run_skips_judged_pairs_and_rejudges_changed_ones",
    ),
    (
        "conflict: a large owner's pairs come from one partitioned pass that finds what the exact comparison finds,"
        " up to an ANN index's misses (a pair straddling clusters; never an invented pair)"
    ): (
        "tests/integration/sleep/test_conflict_bulk.py::test_bulk_and_exact_pair_search_give_the_same_run",
        "tests/unit/platform/test_bulk_pairs.py::test_partitioned_pass_equals_exact_knn_pairs",
        "tests/integration/vectors/test_contract.py::test_neighbours_in_bulk_equal_one_search_per_memory",
    ),
    "conflict: one pair per memory, best first": (
        "tests/unit/sleep/test_conflict_selection.py::test_one_pair_per_memory_highest_similarity_first",
    ),
    "conflict: caps per run and per batch; one LLM call per batch, applied on its own": (
        "tests/unit/sleep/test_conflict_selection.py::test_per_run_cap_counts_leftovers_and_batches_split_the_rest",
        "tests/integration/sleep/test_conflict_rules.py::test_caps_batches_and_a_broken_batch_degrade_the_phase_and_leave_its_pairs_unrecorded",
    ),
    "conflict: `judged_at` taken before the batch is sent; failed decisions are not recorded": (
        "tests/unit/sleep/test_decisions.py::test_judged_at_is_the_later_of_send_time_and_newest_update",
        "tests/unit/sleep/test_decisions.py::test_ledger_records_outcome_and_skips_failed_pairs",
    ),
    "conflict: the action sets; `differentiate` never edits content": (
        "tests/unit/sleep/test_decisions.py::test_allowed_actions_sets",
        "tests/unit/sleep/test_decisions.py::test_differentiate_records_hashes_and_distinctions_never_content",
    ),
    "conflict: a pair with a global memory goes to the review queue": (
        "tests/integration/sleep/test_spec_rules.py::test_a_pair_with_a_global_memory_goes_to_the_review_queue_not_the_llm",
        "tests/unit/sleep/test_decisions.py::test_cross_scope_pairs_go_to_review_once_each",
    ),
    "conflict: `conflictFreezeEnabled` parks the selected pairs for review without an LLM call": (
        "tests/integration/sleep/test_spec_rules.py::test_freeze_mode_parks_pairs_for_review_without_an_llm_call",
        "tests/integration/sleep/test_review.py::test_freeze_mode_without_an_llm_route_still_parks_pairs",
        "tests/unit/sleep/test_decisions.py::test_freeze_parks_every_selected_pair_unjudged_and_records_it",
    ),
    "review: parked pairs are listed with a pending count; accept, merge or dismiss resolves one": (
        "tests/integration/sleep/test_review.py::test_parked_pairs_are_listed_and_resolved_with_receipts",
        "tests/unit/sleep/test_conflict_review.py::test_accept_keeps_one_side_and_archives_the_other",
        "tests/unit/sleep/test_conflict_review.py::test_merge_keeps_one_side_with_the_given_text",
    ),
    "review: a dismissed pair is not queued again until a side changes": (
        "tests/integration/sleep/test_review.py::test_a_dismissed_pair_stays_out_of_the_queue_until_a_side_changes",
    ),
    "review: a global memory is never archived or rewritten by a resolution": (
        "tests/unit/sleep/test_conflict_review.py::test_a_global_memory_is_never_archived_or_rewritten",
        "tests/integration/sleep/test_review.py::test_a_dismissed_pair_stays_out_of_the_queue_until_a_side_changes",
    ),
    "conflict: `reflectionUpdateMaxPerRun` caps updates over the whole run": (
        "tests/integration/sleep/test_spec_rules.py::test_the_update_cap_holds_for_the_whole_run_and_the_rest_waits",
        "tests/unit/sleep/test_decisions.py::test_updates_past_the_run_cap_wait_for_a_later_run",
    ),
    "demotion: cold to `summary` (restorable), colder to `archived`": (
        "tests/integration/sleep/test_demotion.py::test_cold_memories_are_demoted_in_batches_and_summaries_archive_later",
    ),
    "demotion: a memory recalled during the run is not demoted": (
        "tests/integration/sleep/test_demotion.py::test_a_memory_recalled_during_the_run_is_not_demoted",
    ),
    "patterns: minimum pool, real evidence, at most `sleepMaxPatternPerRun`, refreshed in place": (
        "tests/integration/sleep/test_patterns.py::test_too_few_memories_skip_the_phase_with_a_reason",
        "tests/integration/sleep/test_patterns.py::test_fake_evidence_is_filtered_the_cap_holds_and_replays_refresh_in_place",
    ),
    "relations: orphans get edges, no cycles": (
        "tests/integration/sleep/test_relations.py::test_orphans_get_inferred_edges_without_cycles_and_only_once",
        "tests/unit/sleep/test_relations.py::test_cycle_attempt_is_downgraded_to_related_to",
    ),
    "affective: opt-in, at least 2 entities, real evidence": (
        "tests/integration/sleep/test_affective.py::test_disabled_and_too_few_entities_skip_with_a_reason",
        "tests/unit/sleep/test_affective.py::test_candidates_need_real_entities_evidence_and_emotion",
    ),
    "affective: pool without pattern, summary or imported memories, with a minimum size": (
        "tests/integration/sleep/test_spec_rules.py::test_the_affective_pool_needs_its_minimum_and_leaves_summaries_out",
        "tests/integration/sleep/test_spec_rules.py::test_imported_memories_take_part_in_no_phase",
    ),
    "affective: a trait short of sessions becomes an occasion marked `downgradedFrom`": (
        "tests/unit/sleep/test_affective.py::test_trait_spanning_two_sessions_is_downgraded_with_min_three",
        "tests/integration/sleep/test_affective.py::test_traits_per_target_become_patterns_and_a_two_session_trait_is_downgraded",
    ),
    "affective: occasions merge when their sessions intersect": (
        "tests/unit/sleep/test_affective.py::test_occasion_merges_into_edge_whose_sessions_intersect",
    ),
    "affective: traits become pattern memories naming the target, capped by `sleepMaxPatternPerRun`": (
        "tests/unit/sleep/test_affective.py::test_confirmed_trait_becomes_pattern_naming_target_and_promotes_occasions",
        "tests/unit/sleep/test_affective.py::test_new_traits_are_capped_by_the_pattern_cap_not_the_relation_cap",
    ),
    "every run writes a `dream_runs` row with every counter, and an eight-segment receipt": (
        "tests/integration/sleep/test_runs.py::test_receipt_has_eight_segments_and_hashes_the_recorded_phases",
        "tests/unit/sleep/test_receipt.py::test_every_phase_of_a_fresh_run_is_recorded_with_all_counters",
    ),
    "run status precedence (`aborted`, `failed`, `degraded`, `noop`, `refreshed`, `ok`)": (
        "tests/unit/sleep/test_receipt.py::test_all_llm_batches_broken_is_failed_even_when_demotion_wrote",
        "tests/unit/sleep/test_receipt.py::test_only_refreshes_is_refreshed_not_ok",
    ),
}


def documented_rules() -> list[str]:
    text = (ROOT / "docs" / "sleep.md").read_text()
    section = text.split("\n## Rules\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:].strip() for line in section.splitlines() if line.startswith("- ")]


def functions_of(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_documented_rule_names_tests_that_exist() -> None:
    rules = documented_rules()
    assert len(rules) >= 40
    assert sorted(rules) == sorted(RULES)
    missing = []
    for refs in RULES.values():
        assert refs
        for ref in refs:
            path, name = ref.split("::")
            if not (ROOT / path).exists() or name not in functions_of(path):
                missing.append(ref)
    assert missing == []
