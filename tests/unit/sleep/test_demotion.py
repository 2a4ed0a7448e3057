"""Archival demotion: summary vs archived by coldness, global scope, summary text, re-check."""

from datetime import UTC, datetime, timedelta

from services.sleep.logic.demotion import DemotionCandidate, SummaryDemotion, demotion_plan, short_summary, still_cold

NOW = datetime(2026, 6, 1, tzinfo=UTC)
LONG = (
    "The user prefers TypeScript for every frontend project and wants strict mode enabled, "
    "with eslint and prettier configured before the first commit of any new repository."
)


def memory(
    memory_id: str,
    days_cold: float | None,
    *,
    state: str = "active",
    created_days: float = 400,
    scope: str = "apiKey",
    content: str = "short text",
) -> DemotionCandidate:
    return DemotionCandidate(
        id=memory_id,
        state=state,
        last_accessed_at=None if days_cold is None else NOW - timedelta(days=days_cold),
        created_at=NOW - timedelta(days=created_days),
        content=content,
        scope=scope,
    )


def test_thresholds_are_inclusive_and_pick_the_right_state() -> None:
    plan = demotion_plan(
        [
            memory("fresh", 29.9),
            memory("warm", 30, content=LONG),
            memory("old", 89.99),
            memory("cold", 90),
            memory("frozen", 400),
        ],
        NOW,
        30,
        90,
    )
    assert [s.id for s in plan.to_summary] == ["warm", "old"]
    assert list(plan.to_archive) == ["cold", "frozen"]
    assert plan.counts.scanned == 5
    warm = plan.to_summary[0]
    assert warm.full_content == LONG
    assert warm.summary == short_summary(LONG)


def test_never_accessed_memory_counts_from_created_at() -> None:
    plan = demotion_plan(
        [memory("new", None, created_days=3), memory("stale", None, created_days=45)],
        NOW,
        30,
        90,
    )
    assert [s.id for s in plan.to_summary] == ["stale"]
    assert plan.to_archive == ()


def test_summary_state_only_moves_on_to_archived() -> None:
    plan = demotion_plan([memory("s1", 45, state="summary"), memory("s2", 95, state="summary")], NOW, 30, 90)
    assert plan.to_summary == ()
    assert plan.to_archive == ("s2",)


def test_archived_and_global_memories_are_never_touched() -> None:
    plan = demotion_plan(
        [memory("arch", 500, state="archived"), memory("glob", 500, scope="global")],
        NOW,
        30,
        90,
    )
    assert plan.to_summary == ()
    assert plan.to_archive == ()
    assert plan.counts.global_skipped == 1
    assert plan.counts.scanned == 2


def test_short_text_is_its_own_summary() -> None:
    plan = demotion_plan([memory("m", 40, content="  likes   tea ")], NOW, 30, 90)
    assert plan.to_summary == (SummaryDemotion(id="m", summary="likes tea", full_content="  likes   tea "),)


def test_summary_cuts_on_a_word_boundary_with_an_ellipsis() -> None:
    summary = short_summary(LONG)
    assert summary.endswith("…")
    body = summary[:-1]
    assert len(body) <= 120
    assert LONG.startswith(body)
    assert LONG[len(body)] == " "  # the cut falls between words
    assert body == (
        "The user prefers TypeScript for every frontend project and wants strict mode enabled, with eslint and prettier"
    )  # "configured" would end at character 121


def test_summary_cut_exactly_at_a_word_end() -> None:
    text = "a" * 60 + " " + "b" * 59 + " tail"  # word ends exactly at 120 chars
    assert short_summary(text) == "a" * 60 + " " + "b" * 59 + "…"


def test_summary_of_one_huge_word_is_cut_hard() -> None:
    assert short_summary("x" * 300) == "x" * 120 + "…"


def test_summary_drops_trailing_punctuation_before_the_ellipsis() -> None:
    text = "word " * 20 + "end, " + "more " * 20
    summary = short_summary(text, limit=104)
    assert summary == ("word " * 20 + "end").strip() + "…"


def test_still_cold_rechecks_against_the_snapshot() -> None:
    snapshot = NOW
    assert still_cold(None, snapshot) is True
    assert still_cold(snapshot - timedelta(days=40), snapshot) is True
    assert still_cold(snapshot, snapshot) is True
    assert still_cold(snapshot + timedelta(seconds=1), snapshot) is False
