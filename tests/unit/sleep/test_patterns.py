"""Pattern discovery: evidence filtering, cap, same-title refresh in place, replay idempotence."""

import pytest

from services.sleep.logic.patterns import (
    ExistingPattern,
    PatternPlan,
    PatternProposal,
    parse_pattern_reply,
    pattern_key,
    title_key,
    validate_patterns,
)
from shared.llm import LlmBadReply

POOL = {f"m{i}" for i in range(10)}


def proposal(title: str, content: str, *evidence: str) -> PatternProposal:
    return PatternProposal(title=title, content=content, evidence=list(evidence))


def existing_from(plan: PatternPlan) -> list[ExistingPattern]:
    """What the store holds after applying a plan."""
    stored = [
        ExistingPattern(memory_id=f"p-{c.key}", title=c.title, content=c.content, evidence=c.evidence)
        for c in plan.creates
    ]
    stored += [
        ExistingPattern(memory_id=r.memory_id, title=r.title, content=r.content, evidence=r.evidence)
        for r in plan.refreshes
    ]
    return stored


def test_fake_evidence_is_filtered_and_patterns_without_real_evidence_dropped() -> None:
    plan = validate_patterns(
        [
            proposal("Morning coder", "Codes before 9am", "m1", "fake-1", "m2"),
            proposal("Ghost", "Invented", "fake-2", "fake-3"),
        ],
        POOL,
        3,
        [],
    )
    assert [(c.title, c.evidence) for c in plan.creates] == [("Morning coder", ("m1", "m2"))]
    assert plan.counts.dropped_no_evidence == 1
    assert plan.counts.evidence_filtered == 3
    assert plan.counts.proposed == 2


def test_at_most_max_per_run_patterns() -> None:
    plan = validate_patterns([proposal(f"P{i}", f"text {i}", f"m{i}") for i in range(5)], POOL, 3, [])
    assert [c.title for c in plan.creates] == ["P0", "P1", "P2"]
    assert plan.counts.cap_skipped == 2


def test_empty_title_or_content_and_repeated_titles_are_dropped() -> None:
    plan = validate_patterns(
        [
            proposal("  ", "x", "m1"),
            proposal("Tea", "   ", "m1"),
            proposal("Tea drinker", "Drinks tea", "m1"),
            proposal("tea   DRINKER", "Drinks a lot of tea", "m2"),
        ],
        POOL,
        3,
        [],
    )
    assert [c.content for c in plan.creates] == ["Drinks tea"]
    assert plan.counts.dropped_invalid == 2
    assert plan.counts.duplicate_title == 1


def test_same_title_refreshes_in_place_with_old_text_to_history() -> None:
    old = ExistingPattern(memory_id="p1", title="Tea Drinker", content="Drinks tea", evidence=("m1",))
    plan = validate_patterns([proposal("  tea drinker ", "Drinks green tea daily", "m1", "m2")], POOL, 3, [old])
    assert plan.creates == ()
    (refresh,) = plan.refreshes
    assert refresh.memory_id == "p1"
    assert refresh.title == "Tea Drinker"
    assert refresh.content == "Drinks green tea daily"
    assert refresh.previous_content == "Drinks tea"
    assert refresh.evidence == ("m1", "m2")
    assert refresh.text_changed is True
    assert plan.counts.unchanged == 0


def test_same_text_is_an_unchanged_refresh() -> None:
    old = ExistingPattern(memory_id="p1", title="Tea", content="Drinks tea", evidence=("m1",))
    (refresh,) = validate_patterns([proposal("Tea", "Drinks tea", "m1", "m3")], POOL, 3, [old]).refreshes
    assert refresh.content == "Drinks tea"
    assert refresh.previous_content is None
    assert refresh.evidence == ("m1", "m3")


def test_replaying_the_same_evidence_three_times_leaves_the_text_unchanged() -> None:
    first = validate_patterns([proposal("Night owl", "Works late", "m3", "m1")], POOL, 3, [])
    store = existing_from(first)
    wordings = ["Works late at night", "Is most active after midnight", "Prefers evenings"]
    for wording, evidence in zip(wordings, [("m1", "m3"), ("m3", "m1"), ("m1",)], strict=True):
        plan = validate_patterns([proposal("NIGHT OWL", wording, *evidence)], POOL, 3, store)
        assert plan.creates == ()
        (refresh,) = plan.refreshes
        assert refresh.content == "Works late"
        assert refresh.previous_content is None
        assert plan.counts.unchanged == 1
        store = existing_from(plan)
    assert store[0].content == "Works late"
    assert store[0].evidence == ("m1", "m3")


def test_refreshes_count_towards_the_cap() -> None:
    old = ExistingPattern(memory_id="p1", title="A", content="a", evidence=("m1",))
    plan = validate_patterns(
        [proposal("A", "a", "m1"), proposal("B", "b", "m2"), proposal("C", "c", "m3")],
        POOL,
        2,
        [old],
    )
    assert [r.title for r in plan.refreshes] == ["A"]
    assert [c.title for c in plan.creates] == ["B"]
    assert plan.counts.cap_skipped == 1


def test_keys_and_titles_ignore_case_and_spacing() -> None:
    assert title_key("  Night\tOWL ") == "night owl"
    assert pattern_key("Night  Owl") == "pattern:night owl"


def test_parse_reply_counts_malformed_items() -> None:
    raw = {
        "patterns": [
            {"title": "A", "content": "a", "evidence": ["m1"]},
            {"title": "B"},
            "junk",
        ]
    }
    parsed = parse_pattern_reply(raw)
    assert parsed.proposals == (proposal("A", "a", "m1"),)
    assert parsed.malformed == 2


def test_parse_reply_rejects_a_reply_without_a_pattern_list() -> None:
    with pytest.raises(LlmBadReply, match="no `patterns` list"):
        parse_pattern_reply({"summary": "no patterns today"})
