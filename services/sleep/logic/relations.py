"""Relation completion (rules, no LLM): edges for entities without relations.

An orphan is an entity with no edge at all when the phase starts. Co-occurrences (two
entities named in the same memories, `count` times, with an optional direction hint
`a <relation> b` found by the caller) are taken strongest first (ties by ids); one touching
an orphan becomes an edge when `count >= min_count`, the two entities have no edge yet, and
some orphan endpoint still has fewer than `max_edges_per_entity` new edges.

The relation is the hint when it is `part_of` or `depends_on`, else `related_to`
(undirected, stored in sorted order). `part_of` and `depends_on` together must stay
acyclic: a hinted edge that would close a cycle (the target already reaches the source)
is downgraded to `related_to` (`cycleDowngraded`).
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import msgspec

from services.sleep.receipt import RelationResult

RELATED_TO: Final = "related_to"
PART_OF: Final = "part_of"
DEPENDS_ON: Final = "depends_on"
HIERARCHICAL: Final = frozenset({PART_OF, DEPENDS_ON})


class Entity(msgspec.Struct, frozen=True, kw_only=True):
    """An entity of the owner's graph."""

    id: str
    name: str
    kind: str = ""


class Edge(msgspec.Struct, frozen=True, kw_only=True):
    """An existing edge `source <relation> target`."""

    source_id: str
    target_id: str
    relation: str


class CoOccurrence(msgspec.Struct, frozen=True, kw_only=True):
    """Two entities named together `count` times; `relation` hints `a <relation> b`."""

    a_id: str
    b_id: str
    count: int
    relation: str = RELATED_TO


class NewEdge(msgspec.Struct, frozen=True, kw_only=True):
    source_id: str
    target_id: str
    relation: str
    weight: int


class RelationPlan(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    new_edges: tuple[NewEdge, ...]
    counts: RelationResult  # every counter but `created` (the phase counts the rows it wrote)


def reaches(graph: Mapping[str, set[str]], start: str, goal: str) -> bool:
    """True when `goal` is reachable from `start` along the directed edges of `graph`."""
    stack, seen = [start], {start}
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def complete_relations(
    entities: Sequence[Entity],
    existing_edges: Iterable[Edge],
    co_occurrences: Iterable[CoOccurrence],
    *,
    min_count: int = 1,
    max_edges_per_entity: int = 3,
) -> RelationPlan:
    """Apply the rules of the module docstring."""
    ids = {e.id for e in entities}
    graph: dict[str, set[str]] = {}
    linked: set[frozenset[str]] = set()
    connected: set[str] = set()
    for edge in existing_edges:
        connected.update((edge.source_id, edge.target_id))
        linked.add(frozenset((edge.source_id, edge.target_id)))
        if edge.relation in HIERARCHICAL:
            graph.setdefault(edge.source_id, set()).add(edge.target_id)
    orphans = ids - connected
    added: dict[str, int] = {}
    new_edges: list[NewEdge] = []
    counts = dict.fromkeys(("co", "unknown", "below", "not_orphan", "duplicate", "capped", "cycle"), 0)
    ordered = sorted(co_occurrences, key=lambda c: (-c.count, *sorted((c.a_id, c.b_id)), c.a_id, c.relation))
    for co in ordered:
        if co.a_id == co.b_id:
            continue
        counts["co"] += 1
        if co.a_id not in ids or co.b_id not in ids:
            counts["unknown"] += 1
            continue
        if co.count < min_count:
            counts["below"] += 1
            continue
        ends = [e for e in (co.a_id, co.b_id) if e in orphans]
        if not ends:
            counts["not_orphan"] += 1
            continue
        pair = frozenset((co.a_id, co.b_id))
        if pair in linked:
            counts["duplicate"] += 1
            continue
        if all(added.get(e, 0) >= max_edges_per_entity for e in ends):
            counts["capped"] += 1
            continue
        relation = co.relation if co.relation in HIERARCHICAL else RELATED_TO
        if relation in HIERARCHICAL and reaches(graph, co.b_id, co.a_id):
            relation = RELATED_TO
            counts["cycle"] += 1
        if relation in HIERARCHICAL:
            graph.setdefault(co.a_id, set()).add(co.b_id)
            source, target = co.a_id, co.b_id
        else:
            source, target = sorted((co.a_id, co.b_id))
        new_edges.append(NewEdge(source_id=source, target_id=target, relation=relation, weight=co.count))
        linked.add(pair)
        for end in ends:
            added[end] = added.get(end, 0) + 1
    return RelationPlan(
        new_edges=tuple(new_edges),
        counts=RelationResult(
            entities=len(ids),
            orphans=len(orphans),
            co_occurrences=counts["co"],
            unknown_entity=counts["unknown"],
            below_min=counts["below"],
            not_orphan=counts["not_orphan"],
            duplicate=counts["duplicate"],
            capped=counts["capped"],
            cycle_downgraded=counts["cycle"],
        ),
    )


def hinted_co_occurrence(
    a_id: str,
    b_id: str,
    count: int,
    *,
    a_part_of_b: int = 0,
    b_part_of_a: int = 0,
    a_depends_on_b: int = 0,
    b_depends_on_a: int = 0,
) -> CoOccurrence:
    """A co-occurrence with the direction hint the texts support most (`related_to` without one).

    The counts say in how many of the shared texts a phrase like "A is part of B" or
    "A depends on B" was found; ties go to part_of before depends_on, a->b before b->a.
    """
    hints = [
        (a_part_of_b, a_id, b_id, PART_OF),
        (b_part_of_a, b_id, a_id, PART_OF),
        (a_depends_on_b, a_id, b_id, DEPENDS_ON),
        (b_depends_on_a, b_id, a_id, DEPENDS_ON),
    ]
    best = max(hints, key=lambda h: h[0])  # max keeps the first of equal counts
    if best[0] <= 0:
        return CoOccurrence(a_id=a_id, b_id=b_id, count=count)
    return CoOccurrence(a_id=best[1], b_id=best[2], count=count, relation=best[3])
