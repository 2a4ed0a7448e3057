"""Affective attribution: validation, trait downgrade, occasion merge, cap, traits, replay."""

import random

import msgspec
import pytest

from services.sleep.logic.affective import (
    AffectiveCandidate,
    AffectiveEdge,
    AffectivePlan,
    attribute_affect,
    parse_affective_reply,
)
from services.sleep.logic.relations import Entity
from services.sleep.logic.traits import ExistingTrait
from shared.llm import LlmBadReply

ENTITIES = [
    Entity(id="e-alice", name="Alice", kind="person"),
    Entity(id="e-bob", name="Bob", kind="person"),
    Entity(id="e-deploy", name="Friday deploys", kind="topic"),
    Entity(id="e-tests", name="Flaky tests", kind="topic"),
]
# m1..m6 in sessions s1..s3 (two memories each); n1 has no session
POOL = {f"m{i}": f"s{(i + 1) // 2}" for i in range(1, 7)} | {"n1": None}


def cand(
    kind: str = "occasion",
    evidence: tuple[str, ...] = ("m1",),
    *,
    person: str = "Alice",
    target: str = "Friday deploys",
    emotion: str = "Anxiety",
    why: str = "mentions stress",
) -> AffectiveCandidate:
    return AffectiveCandidate(
        person=person, target=target, emotion=emotion, kind=kind, evidence=list(evidence), why=why
    )


def run(
    candidates: list[AffectiveCandidate],
    edges: list[AffectiveEdge] | None = None,
    known: list[ExistingTrait] | None = None,
    *,
    run_id: str = "run-1",
    min_sessions: int = 3,
    cap: int = 10,
    traits: int = 3,
) -> AffectivePlan:
    return attribute_affect(
        candidates,
        ENTITIES,
        POOL,
        edges or [],
        known or [],
        run_id=run_id,
        trait_min_sessions=min_sessions,
        max_relations_per_run=cap,
        max_new_traits=traits,
    )


def stored(plan: AffectivePlan, edges: list[AffectiveEdge]) -> list[AffectiveEdge]:
    """The edges after applying a plan (new edges get ids)."""
    by_id = {e.edge_id: e for e in edges}
    for update in plan.edge_updates:
        by_id[update.edge_id] = msgspec.structs.replace(
            by_id[update.edge_id],
            evidence=update.evidence,
            sessions=update.sessions,
            last_merged_run_id=update.last_merged_run_id,
            promoted_to_trait=update.promoted_to_trait,
            trait_session_count=update.trait_session_count,
        )
    for index, new in enumerate(plan.new_edges):
        edge_id = f"edge-{len(by_id) + index}"
        by_id[edge_id] = AffectiveEdge(
            edge_id=edge_id,
            person_id=new.person_id,
            target_id=new.target_id,
            emotion=new.emotion,
            evidence=new.evidence,
            sessions=new.sessions,
            promoted_to_trait=new.promoted_to_trait,
            trait_session_count=new.trait_session_count,
        )
    return list(by_id.values())


def stored_traits(plan: AffectivePlan, traits: list[ExistingTrait]) -> list[ExistingTrait]:
    by_key = {t.key: t for t in traits}
    for pattern in plan.trait_patterns:
        by_key[pattern.key] = ExistingTrait(
            memory_id=pattern.memory_id or f"mem-{pattern.key}",
            key=pattern.key,
            content=pattern.content,
            evidence=pattern.evidence,
        )
    return list(by_key.values())


def test_candidates_need_real_entities_evidence_and_emotion() -> None:
    plan = run(
        [
            cand(person="Carol"),
            cand(target="Mondays"),
            cand(emotion="   "),
            cand(evidence=("fake-1", "fake-2")),
            cand(kind="mood"),
            cand(evidence=("m1", "fake-3")),
        ]
    )
    assert [(d.index, d.reason) for d in plan.dropped] == [
        (0, "unknown person"),
        (1, "unknown target"),
        (2, "empty emotion"),
        (3, "no real evidence"),
        (4, "invalid kind 'mood'"),
    ]
    (edge,) = plan.new_edges
    assert edge.evidence == ("m1",)
    assert (edge.person_id, edge.target_id, edge.emotion) == ("e-alice", "e-deploy", "anxiety")
    assert plan.counts.fake_evidence == 3
    assert plan.counts.candidates == 6


def test_entities_resolve_by_id_or_case_insensitive_name() -> None:
    plan = run([cand(person="e-alice", target="  friday   DEPLOYS ")])
    assert [(e.person_id, e.target_id) for e in plan.new_edges] == [("e-alice", "e-deploy")]


def test_trait_spanning_two_sessions_is_downgraded_with_min_three() -> None:
    plan = run([cand("trait", ("m1", "m2", "m3"))])  # sessions s1, s2
    assert plan.counts.downgraded == 1
    assert plan.trait_patterns == ()
    (edge,) = plan.new_edges
    assert edge.session_count == 2
    assert edge.sessions == ("s1", "s2")
    assert edge.downgraded_from == "trait"  # the edge says it was a trait the evidence did not carry
    assert run([cand(evidence=("m1",))]).new_edges[0].downgraded_from is None


def test_new_traits_are_capped_by_the_pattern_cap_not_the_relation_cap() -> None:
    two = [
        cand("trait", ("m1", "m3", "m5")),
        cand("trait", ("m2", "m4", "m6"), target="Flaky tests", emotion="frustration"),
    ]
    plan = run(two, cap=0)  # no new edges allowed: traits still come
    assert plan.counts.traits_created == 2 and plan.counts.cap_skipped == 0
    plan = run(two, traits=1)  # what discovery left of sleepMaxPatternPerRun
    assert plan.counts.traits_created == 1 and plan.counts.traits_cap_skipped == 1
    known = ExistingTrait(memory_id="p1", key="affect:e-alice:e-deploy:anxiety", content="old", evidence=("m1",))
    plan = run(two[:1], known=[known], traits=0)  # refreshing a known trait is not new
    assert plan.counts.traits_refreshed == 1 and plan.counts.traits_cap_skipped == 0


def test_trait_with_min_two_is_confirmed_for_the_same_evidence() -> None:
    plan = run([cand("trait", ("m1", "m3"))], min_sessions=2)
    assert plan.counts.downgraded == 0
    (pattern,) = plan.trait_patterns
    assert pattern.session_count == 2


def test_sessionless_memories_add_no_session() -> None:
    plan = run([cand("trait", ("m1", "m3", "n1"))])
    assert plan.counts.downgraded == 1
    assert plan.new_edges[0].session_count == 2


def test_occasion_merges_into_edge_whose_sessions_intersect() -> None:
    existing = AffectiveEdge(
        edge_id="edge-1",
        person_id="e-alice",
        target_id="e-deploy",
        emotion="anxiety",
        evidence=("m1",),
        sessions=("s1",),
    )
    plan = run([cand(evidence=("m2", "m3"))], [existing], run_id="run-7")
    assert plan.new_edges == ()
    (update,) = plan.edge_updates
    assert update.edge_id == "edge-1"
    assert update.evidence == ("m1", "m2", "m3")
    assert update.sessions == ("s1", "s2")
    assert update.session_count == 2
    assert update.last_merged_run_id == "run-7"
    assert plan.counts.merged == 1


def test_occasion_with_disjoint_sessions_or_other_emotion_is_a_new_edge() -> None:
    existing = AffectiveEdge(
        edge_id="edge-1",
        person_id="e-alice",
        target_id="e-deploy",
        emotion="anxiety",
        evidence=("m1",),
        sessions=("s1",),
    )
    plan = run([cand(evidence=("m5",)), cand(evidence=("m1",), emotion="joy")], [existing])
    assert plan.counts.merged == 0
    assert [(e.emotion, e.sessions) for e in plan.new_edges] == [
        ("anxiety", ("s3",)),
        ("joy", ("s1",)),
    ]


def test_merges_happen_before_the_per_run_cap() -> None:
    existing = AffectiveEdge(
        edge_id="edge-1",
        person_id="e-alice",
        target_id="e-deploy",
        emotion="anxiety",
        evidence=("m1",),
        sessions=("s1",),
    )
    plan = run(
        [
            cand(evidence=("m5",), emotion="joy"),
            cand(evidence=("m3",), emotion="anger"),
            cand(evidence=("m2",)),  # last in the reply, but a merge: not subject to the cap
        ],
        [existing],
        cap=1,
    )
    assert plan.counts.merged == 1
    assert [e.emotion for e in plan.new_edges] == ["joy"]
    assert plan.counts.cap_skipped == 1
    assert plan.counts.created == 1


def test_zero_cap_still_merges() -> None:
    existing = AffectiveEdge(
        edge_id="edge-1",
        person_id="e-alice",
        target_id="e-deploy",
        emotion="anxiety",
        evidence=("m1",),
        sessions=("s1",),
    )
    plan = run([cand(evidence=("m2",)), cand(evidence=("m6",), emotion="joy")], [existing], cap=0)
    assert plan.counts.merged == 1
    assert plan.new_edges == ()
    assert plan.counts.cap_skipped == 1


def test_confirmed_trait_becomes_pattern_naming_target_and_promotes_occasions() -> None:
    occasion = AffectiveEdge(
        edge_id="edge-1",
        person_id="e-alice",
        target_id="e-deploy",
        emotion="anxiety",
        evidence=("m1",),
        sessions=("s1",),
    )
    plan = run([cand("trait", ("m1", "m3", "m5"), why="dreads them")], [occasion])
    (pattern,) = plan.trait_patterns
    assert pattern.title == "Alice feels anxiety about Friday deploys"
    assert "Friday deploys" in pattern.title
    assert pattern.content == "Alice feels anxiety about Friday deploys. dreads them"
    assert pattern.key == "affect:e-alice:e-deploy:anxiety"
    assert pattern.memory_id is None
    assert pattern.session_count == 3
    (update,) = plan.edge_updates
    assert update.promoted_to_trait is True
    assert update.trait_session_count == 3
    assert update.session_count == 1  # unchanged
    assert update.evidence == ("m1",)
    assert plan.counts.promoted == 1
    assert plan.counts.traits_created == 1
    assert plan.new_edges == ()


def test_one_person_two_targets_over_threshold_yields_two_patterns() -> None:
    plan = run(
        [
            cand("trait", ("m1", "m3", "m5")),
            cand("trait", ("m2", "m4", "m6"), target="Flaky tests", emotion="frustration"),
        ]
    )
    assert sorted(p.title for p in plan.trait_patterns) == [
        "Alice feels anxiety about Friday deploys",
        "Alice feels frustration about Flaky tests",
    ]
    assert len({p.key for p in plan.trait_patterns}) == 2
    assert plan.counts.traits_created == 2


def test_replay_with_shuffled_evidence_creates_no_second_edge_and_refreshes() -> None:
    batch = [
        cand(evidence=("m1", "m2")),
        cand(evidence=("m5",), person="Bob", target="Flaky tests", emotion="joy"),
        cand("trait", ("m2", "m4", "m6"), target="Flaky tests", emotion="frustration"),
    ]
    first = run(batch, run_id="run-1")
    assert (first.counts.created, first.counts.traits_created) == (2, 1)
    edges, traits = stored(first, []), stored_traits(first, [])

    rng = random.Random(7)
    for replay in range(3):
        shuffled = [msgspec.structs.replace(c, evidence=rng.sample(c.evidence, len(c.evidence))) for c in batch]
        plan = run(shuffled, edges, traits, run_id=f"run-{replay + 2}")
        assert plan.new_edges == ()
        assert plan.counts.created == 0
        assert plan.counts.merge_unchanged == 2
        assert plan.counts.merged == 0
        assert (plan.counts.traits_created, plan.counts.traits_refreshed, plan.counts.traits_unchanged) == (0, 1, 1)
        assert plan.trait_patterns[0].previous_content is None
        edges, traits = stored(plan, edges), stored_traits(plan, traits)
        assert len(edges) == 2
        assert {e.last_merged_run_id for e in edges} == {f"run-{replay + 2}"}
    assert traits[0].content == first.trait_patterns[0].content


def test_duplicate_candidates_in_one_reply_fold_into_one_edge() -> None:
    plan = run([cand(evidence=("m1",)), cand(evidence=("m2", "m3"))])
    (edge,) = plan.new_edges
    assert edge.evidence == ("m1", "m2", "m3")
    assert edge.session_count == 2
    assert plan.counts.combined == 1


def test_trait_with_new_evidence_refreshes_text_and_keeps_old_in_history() -> None:
    old = ExistingTrait(
        memory_id="mem-1",
        key="affect:e-alice:e-deploy:anxiety",
        content="Alice feels anxiety about Friday deploys. old reason",
        evidence=("m1", "m3", "m5"),
    )
    plan = run([cand("trait", ("m1", "m3", "m6"), why="new reason")], known=[old])
    (pattern,) = plan.trait_patterns
    assert pattern.memory_id == "mem-1"
    assert pattern.previous_content == "Alice feels anxiety about Friday deploys. old reason"
    assert pattern.content == "Alice feels anxiety about Friday deploys. new reason"
    assert pattern.evidence == ("m1", "m3", "m5", "m6")
    assert (plan.counts.traits_refreshed, plan.counts.traits_unchanged) == (1, 0)


def test_parse_reply() -> None:
    raw = {
        "candidates": [
            {"person": "Alice", "target": "Bob", "emotion": "joy", "kind": "occasion", "evidence": ["m1"], "why": "x"},
            {"person": 3},
        ]
    }
    parsed = parse_affective_reply(raw)
    assert parsed.candidates == (
        AffectiveCandidate(person="Alice", target="Bob", emotion="joy", kind="occasion", evidence=["m1"], why="x"),
    )
    assert parsed.malformed == 1
    with pytest.raises(LlmBadReply, match="no `candidates` list"):
        parse_affective_reply({})
