"""Conflict decisions: parsing, defaults to keep, action sets, plans, judged_at and ledger."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.sleep.logic.conflict_decisions import (
    FROZEN_REASON,
    ArchivePlan,
    ConflictPendingPlan,
    ConflictPlan,
    CreatePlan,
    DifferentiatePlan,
    KeepPlan,
    MergePlan,
    PairDecision,
    SupersedePlan,
    UpdatePlan,
    allowed_actions,
    batch_updated_ats,
    conflict_prompt,
    hold_decisions,
    judged_at_for_batch,
    ledger_entries,
    ledger_outcome,
    parked_entries,
    parse_decisions,
    plan_action,
    tally_applied,
)
from services.sleep.logic.conflict_pairs import CandidatePair, ConflictPair, cross_scope_pairs
from services.sleep.logic.schedule import conflict_skip_reason
from shared.llm import LlmBadReply, decode_json_content

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def pair(a: str, b: str, a_at: datetime = T0, b_at: datetime = T0) -> ConflictPair:
    return ConflictPair(
        a_id=a,
        b_id=b,
        similarity=0.9,
        a_updated_at=a_at,
        b_updated_at=b_at,
        a_hash=f"h-{a}",
        b_hash=f"h-{b}",
    )


BATCH = [pair("a1", "b1"), pair("a2", "b2", T0, T0 + timedelta(hours=1)), pair("a3", "b3")]


def reply(*decisions: dict[str, object]) -> object:
    return {"decisions": list(decisions)}


def plans(raw: object, action_set: str = "default") -> list[ConflictPlan]:
    """The plans of a reply given as the model's text or as already decoded JSON."""
    decoded = decode_json_content(raw, object) if isinstance(raw, str) else raw
    return [d.plan for d in parse_decisions(decoded, BATCH, action_set).decisions]


def test_each_default_action_becomes_its_plan() -> None:
    batch = [pair(f"a{i}", f"b{i}") for i in range(6)]
    raw = reply(
        {"pair": 0, "action": "keep"},
        {"pair": 1, "action": "merge", "keep": "b", "content": "merged text"},
        {"pair": 2, "action": "update", "target": "a", "content": " new text "},
        {"pair": 3, "action": "archive", "target": "b3"},
        {"pair": 4, "action": "conflict", "reason": "contradict"},
        {"pair": 5, "action": "create", "content": "derived fact"},
    )
    parsed = parse_decisions(raw, batch, "default")
    assert [d.plan for d in parsed.decisions] == [
        KeepPlan(a_id="a0", b_id="b0"),
        MergePlan(keep_id="b1", archive_id="a1", content="merged text"),
        UpdatePlan(memory_id="a2", content="new text"),
        ArchivePlan(memory_id="b3"),
        ConflictPendingPlan(a_id="a4", b_id="b4", note="contradict"),
        CreatePlan(content="derived fact", source_ids=("a5", "b5")),
    ]
    assert (parsed.invalid, parsed.undecided) == (0, 0)
    assert not any(d.defaulted for d in parsed.decisions)


def test_invalid_decisions_default_to_keep_and_are_counted() -> None:
    parsed = parse_decisions(
        reply(
            {"pair": 0, "action": "delete"},  # unknown action
            {"pair": 1, "action": "merge", "keep": "a"},  # merge without content
            {"pair": 7, "action": "archive", "target": "a"},  # unknown pair
            {"action": "archive", "target": "a"},  # no pair at all
            {"pair": 2, "action": "update", "target": "c", "content": "x"},  # bad side
        ),
        BATCH,
        "default",
    )
    assert [d.action for d in parsed.decisions] == ["keep", "keep", "keep"]
    assert all(d.defaulted for d in parsed.decisions)
    assert parsed.invalid == 5
    assert parsed.undecided == 0
    assert "unknown action 'delete'" in parsed.problems[0]
    assert "unknown pair 7" in parsed.problems[2]


def test_pairs_without_a_decision_default_to_keep_as_undecided() -> None:
    parsed = parse_decisions(reply({"pair": 1, "action": "archive", "target": "a"}), BATCH, "default")
    assert [d.action for d in parsed.decisions] == ["keep", "archive", "keep"]
    assert [d.defaulted for d in parsed.decisions] == [True, False, True]
    assert (parsed.invalid, parsed.undecided) == (0, 2)


def test_second_decision_for_a_pair_is_ignored() -> None:
    parsed = parse_decisions(
        reply(
            {"pair": 0, "action": "archive", "target": "a"},
            {"pair": 0, "action": "create", "content": "x"},
        ),
        BATCH,
        "default",
    )
    assert parsed.decisions[0].plan == ArchivePlan(memory_id="a1")
    assert parsed.invalid == 1


def test_malformed_item_is_counted_and_the_rest_lands() -> None:
    parsed = parse_decisions(
        reply("not an object", {"pair": "2", "action": "ARCHIVE", "target": "B"}),  # type: ignore[arg-type]
        BATCH,
        "default",
    )
    assert parsed.decisions[2].plan == ArchivePlan(memory_id="b3")
    assert parsed.invalid == 1


def test_pair_named_by_ids_in_either_order() -> None:
    parsed = parse_decisions(reply({"ids": ["b2", "a2"], "action": "archive", "target": "a"}), BATCH, "default")
    assert parsed.decisions[1].plan == ArchivePlan(memory_id="a2")


def test_pair_index_and_ids_that_disagree_are_invalid() -> None:
    parsed = parse_decisions(
        reply({"pair": 0, "ids": ["a2", "b2"], "action": "archive", "target": "a"}),
        BATCH,
        "default",
    )
    assert [d.action for d in parsed.decisions] == ["keep", "keep", "keep"]
    assert parsed.invalid == 1


@pytest.mark.parametrize("action", ["supersede", "differentiate"])
def test_full_only_actions_default_to_keep_in_the_default_set(action: str) -> None:
    parsed = parse_decisions(reply({"pair": 1, "action": action, "distinctions": "one is work"}), BATCH, "default")
    assert parsed.decisions[1].action == "keep"
    assert parsed.invalid == 1
    assert "sleepActionSet=full" in parsed.problems[0]


def test_full_set_allows_supersede_newer_wins() -> None:
    assert plans(reply({"pair": 1, "action": "supersede"}), "full")[1] == SupersedePlan(newer_id="b2", older_id="a2")


def test_supersede_with_equal_updated_at_cannot_be_decided() -> None:
    parsed = parse_decisions(reply({"pair": 0, "action": "supersede"}), BATCH, "full")
    assert parsed.decisions[0].action == "keep"
    assert parsed.invalid == 1


def test_differentiate_records_hashes_and_distinctions_never_content() -> None:
    raw = reply({"pair": 2, "action": "differentiate", "distinctions": "home vs work", "content": "X"})
    plan = plans(raw, "full")[2]
    assert plan == DifferentiatePlan(a_id="a3", b_id="b3", hash_a="h-a3", hash_b="h-b3", distinctions="home vs work")
    assert "content" not in msgspec.to_builtins(plan)


def test_differentiate_without_distinctions_is_invalid() -> None:
    parsed = parse_decisions(reply({"pair": 2, "action": "differentiate"}), BATCH, "full")
    assert parsed.decisions[2].action == "keep"
    assert parsed.invalid == 1


def test_allowed_actions_sets() -> None:
    assert allowed_actions("default") == {
        "keep", "merge", "conflict", "create", "archive", "update"
    }  # fmt: skip
    assert allowed_actions("full") - allowed_actions("default") == {"supersede", "differentiate"}
    with pytest.raises(ValueError):
        allowed_actions("all")


def test_code_fenced_and_bare_list_replies_are_accepted() -> None:
    fenced = '```json\n{"decisions": [{"pair": 0, "action": "archive", "target": "a"}]}\n```'
    bare = '[{"pair": 0, "action": "archive", "target": "a"}]'
    assert plans(fenced)[0] == plans(bare)[0] == ArchivePlan(memory_id="a1")


@pytest.mark.parametrize("raw", ["", "I think they are the same", '{"verdict": "merge"}', "42"])
def test_wholly_undecodable_reply_raises_a_typed_error(raw: str) -> None:
    with pytest.raises(LlmBadReply):
        plans(raw)


def test_plans_roundtrip_as_a_tagged_union() -> None:
    plan = MergePlan(keep_id="a", archive_id="b", content="c")
    encoded = msgspec.json.encode(plan)
    assert msgspec.json.decode(encoded)["action"] == "merge"
    assert msgspec.json.decode(encoded, type=ConflictPlan) == plan
    assert plan_action(plan) == "merge"


def test_judged_at_is_the_later_of_send_time_and_newest_update() -> None:
    sent = T0 + timedelta(minutes=30)
    assert judged_at_for_batch(sent, batch_updated_ats(BATCH)) == T0 + timedelta(hours=1)
    assert judged_at_for_batch(sent, [T0]) == sent
    assert judged_at_for_batch(sent, []) == sent


def test_ledger_records_outcome_and_skips_failed_pairs() -> None:
    parsed = parse_decisions(
        reply(
            {"pair": 0, "action": "merge", "keep": "a", "content": "m"},
            {"pair": 2, "action": "archive", "target": "b"},
        ),
        BATCH,
        "default",
    )
    judged = T0 + timedelta(hours=2)
    rows = ledger_entries(parsed.decisions, judged, failed={("a3", "b3")})
    assert [(r.a_id, r.b_id, r.outcome, r.judged_at) for r in rows] == [
        ("a1", "b1", "merge", judged),
        ("a2", "b2", "keep", judged),
    ]
    assert tally_applied(parsed.decisions, failed={("a3", "b3")}) == {
        "archive": 0,
        "conflict": 0,
        "create": 0,
        "differentiate": 0,
        "keep": 1,
        "merge": 1,
        "supersede": 0,
        "update": 0,
    }


def test_ledger_outcome_is_the_non_keep_action() -> None:
    keep = PairDecision(pair=BATCH[0], plan=KeepPlan(a_id="a1", b_id="b1"))
    archive = PairDecision(pair=BATCH[0], plan=ArchivePlan(memory_id="b1"))
    assert ledger_outcome(keep) == "keep"
    assert ledger_outcome(archive) == "archive"


def test_prompt_lists_the_allowed_actions_and_every_pair() -> None:
    contents = {m: f"text of {m}" for p in BATCH for m in p.key}
    default = conflict_prompt(BATCH, contents, "default")
    full = conflict_prompt(BATCH, contents, "full")
    assert "- supersede:" not in default
    assert "- differentiate:" in full
    assert "Pair 2:" in default
    assert "text of b3" in default
    with pytest.raises(ValueError, match="a1"):
        conflict_prompt(BATCH, {}, "default")


def _decided(*actions: str) -> tuple[PairDecision, ...]:
    pairs = [pair(f"a{i}", f"b{i}", T0, T0 + timedelta(hours=1)) for i in range(len(actions))]
    decisions = []
    for p, action in zip(pairs, actions, strict=True):
        body: dict[str, object] = {"pair": 0, "action": action, "keep": "a", "target": "b", "content": "x"}
        body.update({"distinctions": "d"} if action == "differentiate" else {})
        decisions.append(parse_decisions(reply(body), [p], "full").decisions[0])
    return tuple(decisions)


def test_freeze_parks_every_selected_pair_unjudged_and_records_it() -> None:
    later = T0 + timedelta(minutes=5)
    entries = parked_entries(BATCH, later)
    assert [(e.a_id, e.b_id, e.judged_at, e.outcome) for e in entries] == [
        ("a1", "b1", later, "conflict"),
        ("a2", "b2", later, "conflict"),
        ("a3", "b3", later, "conflict"),
    ]
    assert "conflictFreezeEnabled" in FROZEN_REASON and "without an LLM call" in FROZEN_REASON
    assert conflict_skip_reason(False, freeze=True) is None  # freeze mode needs no LLM route
    assert conflict_skip_reason(False, freeze=False) == "no llm route"


def test_updates_past_the_run_cap_wait_for_a_later_run() -> None:
    decisions = _decided("update", "merge", "update", "update")
    held = hold_decisions(decisions, updates_left=1)
    assert [d.action for d in held.decisions] == ["update", "merge", "keep", "keep"]
    assert held.capped == {decisions[2].pair.key, decisions[3].pair.key}
    entries = ledger_entries(held.decisions, T0, held.capped)  # held-back pairs are not recorded
    assert {(e.a_id, e.b_id) for e in entries} == {decisions[0].pair.key, decisions[1].pair.key}
    assert hold_decisions(decisions, updates_left=0).capped == {
        decisions[0].pair.key,
        decisions[2].pair.key,
        decisions[3].pair.key,
    }
    assert hold_decisions(decisions, updates_left=-3).decisions[0].action == "keep"


def test_cross_scope_pairs_go_to_review_once_each() -> None:
    hits = [
        CandidatePair("own1", "glob", 0.95),
        CandidatePair("glob", "own1", 0.95),  # the same pair, other way round
        CandidatePair("own2", "glob", 0.80),  # below the threshold
        CandidatePair("own1", "own2", 0.99),  # the owner's own pair: the LLM decides
        CandidatePair("glob", "glob2", 0.99),  # two global memories: not this owner's business
        CandidatePair("gone", "glob", 0.99),  # the owner's side vanished (or is imported)
    ]
    own, global_ids = {"own1", "own2"}, {"glob", "glob2"}
    assert cross_scope_pairs(hits, own, global_ids, threshold=0.85) == [("glob", "own1")]
