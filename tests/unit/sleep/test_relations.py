"""Relation completion: orphans only, inferred relation types, no part_of/depends_on cycles."""

from services.sleep.logic.relations import CoOccurrence, Edge, Entity, NewEdge, complete_relations, reaches

ENTITIES = [Entity(id=i, name=i.upper()) for i in ("a", "b", "c", "d", "e", "f")]


def co(a: str, b: str, count: int = 3, relation: str = "related_to") -> CoOccurrence:
    return CoOccurrence(a_id=a, b_id=b, count=count, relation=relation)


def edges_of(plan_edges: tuple[NewEdge, ...]) -> list[tuple[str, str, str]]:
    return [(e.source_id, e.target_id, e.relation) for e in plan_edges]


def has_cycle(edges: list[tuple[str, str, str]]) -> bool:
    graph: dict[str, set[str]] = {}
    for source, target, relation in edges:
        if relation in ("part_of", "depends_on"):
            graph.setdefault(source, set()).add(target)
    return any(reaches(graph, t, s) for s, t, r in edges if r in ("part_of", "depends_on"))


def test_only_orphans_get_edges_with_inferred_types() -> None:
    existing = [Edge(source_id="a", target_id="b", relation="related_to")]
    plan = complete_relations(
        ENTITIES,
        existing,
        [
            co("a", "b", 9),  # both connected already
            co("c", "a", 5, "part_of"),
            co("d", "a", 4, "depends_on"),
            co("e", "b", 2, "likes"),  # unknown hint -> related_to
        ],
    )
    assert edges_of(plan.new_edges) == [
        ("c", "a", "part_of"),
        ("d", "a", "depends_on"),
        ("b", "e", "related_to"),
    ]
    assert plan.counts.orphans == 4
    assert plan.counts.not_orphan == 1
    assert plan.counts.entities == 6
    assert [e.weight for e in plan.new_edges] == [5, 4, 2]


def test_cycle_attempt_is_downgraded_to_related_to() -> None:
    plan = complete_relations(
        ENTITIES,
        [],
        [co("a", "b", 5, "part_of"), co("b", "c", 4, "depends_on"), co("c", "a", 3, "part_of")],
        max_edges_per_entity=3,
    )
    got = edges_of(plan.new_edges)
    assert got == [("a", "b", "part_of"), ("b", "c", "depends_on"), ("a", "c", "related_to")]
    assert plan.counts.cycle_downgraded == 1
    assert not has_cycle(got)


def test_cycle_through_existing_edges_is_refused() -> None:
    existing = [
        Edge(source_id="a", target_id="b", relation="part_of"),
        Edge(source_id="b", target_id="c", relation="depends_on"),
    ]
    plan = complete_relations(ENTITIES, existing, [co("c", "d", 5, "part_of"), co("d", "a", 4, "part_of")])
    got = edges_of(plan.new_edges)
    assert got == [("c", "d", "part_of"), ("a", "d", "related_to")]
    assert plan.counts.cycle_downgraded == 1
    assert not has_cycle([(e.source_id, e.target_id, e.relation) for e in existing] + got)


def test_two_way_hint_between_orphans_keeps_one_edge() -> None:
    plan = complete_relations(ENTITIES, [], [co("e", "f", 3, "part_of"), co("f", "e", 3, "part_of")])
    assert edges_of(plan.new_edges) == [("e", "f", "part_of")]
    assert plan.counts.duplicate == 1


def test_unknown_entities_min_count_and_per_entity_cap() -> None:
    plan = complete_relations(
        ENTITIES,
        [],
        [co("a", "zz", 9), co("a", "b", 1), co("a", "c", 5), co("a", "d", 4), co("a", "e", 3)],
        min_count=2,
        max_edges_per_entity=2,
    )
    # a's third edge is capped although e is an orphan too: e still lacks a relation, so
    # the edge goes in as long as one orphan endpoint is below its cap.
    assert edges_of(plan.new_edges) == [
        ("a", "c", "related_to"),
        ("a", "d", "related_to"),
        ("a", "e", "related_to"),
    ]
    assert plan.counts.unknown_entity == 1
    assert plan.counts.below_min == 1
    assert plan.counts.capped == 0


def test_cap_applies_when_every_orphan_endpoint_is_full() -> None:
    existing = [Edge(source_id="b", target_id="c", relation="related_to")]
    plan = complete_relations(ENTITIES, existing, [co("a", "b", 5), co("a", "c", 4)], max_edges_per_entity=1)
    assert edges_of(plan.new_edges) == [("a", "b", "related_to")]
    assert plan.counts.capped == 1


def test_result_is_independent_of_input_order() -> None:
    cos = [co("a", "b", 3, "part_of"), co("b", "a", 3, "part_of"), co("c", "d", 3)]
    first = complete_relations(ENTITIES, [], cos)
    second = complete_relations(ENTITIES, [], list(reversed(cos)))
    assert first.new_edges == second.new_edges
