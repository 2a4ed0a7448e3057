"""Affective attribution: LLM emotion candidates -> `affective_context` edges and trait patterns.

Reply schema: `{"candidates": [{"person", "target", "emotion", "kind": "occasion"|"trait",
"evidence": [memory ids], "why"}]}`. An *occasion* is one edge between two entities; a *trait*
(evidence over at least `trait_min_sessions` sessions) also becomes a `pattern` memory keyed
`affect:<person>:<target>:<emotion>`. `attribute_affect` validates the candidates against the
real entities and evidence, merges them into existing edges, caps what is new and promotes
traits; every rejected or skipped candidate is counted with its reason. Replaying a reply never
creates a second edge.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec

from services.sleep.logic.relations import Entity
from services.sleep.logic.traits import ExistingTrait, TraitPattern, plan_trait, trait_key
from services.sleep.receipt import AffectiveResult
from shared.llm.reply import convert_items, reply_items

OCCASION: Final = "occasion"
TRAIT: Final = "trait"
AffectKey = tuple[str, str, str]


class AffectiveCandidate(msgspec.Struct, frozen=True, kw_only=True):
    person: str
    target: str
    emotion: str
    kind: str = OCCASION
    evidence: list[str] = msgspec.field(default_factory=list)
    why: str = ""


class AffectiveReply(msgspec.Struct, frozen=True, kw_only=True):
    candidates: tuple[AffectiveCandidate, ...]
    malformed: int = 0
    problems: tuple[str, ...] = ()


class AffectiveEdge(msgspec.Struct, frozen=True, kw_only=True):
    """An existing `affective_context` (occasion) edge."""

    edge_id: str
    person_id: str
    target_id: str
    emotion: str
    evidence: tuple[str, ...]
    sessions: tuple[str, ...]
    promoted_to_trait: bool = False
    trait_session_count: int = 0
    last_merged_run_id: str | None = None


class NewAffectiveEdge(msgspec.Struct, frozen=True, kw_only=True):
    person_id: str
    target_id: str
    emotion: str
    evidence: tuple[str, ...]
    sessions: tuple[str, ...]
    session_count: int
    why: str
    run_id: str
    promoted_to_trait: bool = False
    trait_session_count: int = 0
    downgraded_from: str | None = None  # "trait" when the LLM's trait lacked the sessions


class AffectiveEdgeUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """The new state of an existing edge (merged and/or promoted)."""

    edge_id: str
    evidence: tuple[str, ...]
    sessions: tuple[str, ...]
    session_count: int
    last_merged_run_id: str | None
    promoted_to_trait: bool
    trait_session_count: int


class DroppedCandidate(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    reason: str


class AffectivePlan(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    new_edges: tuple[NewAffectiveEdge, ...]
    edge_updates: tuple[AffectiveEdgeUpdate, ...]
    trait_patterns: tuple[TraitPattern, ...]
    dropped: tuple[DroppedCandidate, ...]
    counts: AffectiveResult  # every counter but entities and malformed (the phase counts those)


@dataclass
class _Group:
    """A working edge or trait: an existing edge (edge_id set) or a new item."""

    person_id: str
    target_id: str
    emotion: str
    evidence: set[str]
    sessions: set[str]
    why: str = ""
    edge_id: str | None = None
    promoted: bool = False
    trait_count: int = 0
    last_merged: str | None = None
    touched: bool = False
    downgraded: bool = False

    def overlaps(self, evidence: set[str], sessions: set[str]) -> bool:
        return bool(self.sessions & sessions or self.evidence & evidence)

    def absorb(self, evidence: set[str], sessions: set[str]) -> bool:
        """Unite; True when something new came in."""
        grew = not (evidence <= self.evidence and sessions <= self.sessions)
        self.evidence |= evidence
        self.sessions |= sessions
        return grew


def parse_affective_reply(reply: object) -> AffectiveReply:
    """Read the decoded LLM reply; malformed items are counted, a reply without a candidate list
    raises ``LlmBadReply``."""
    items, problems = convert_items(reply_items(reply, "candidates"), AffectiveCandidate)
    return AffectiveReply(candidates=tuple(items), malformed=len(problems), problems=tuple(problems))


def _name_key(text: str) -> str:
    return " ".join(text.casefold().split())


class _Resolver:
    def __init__(self, entities: Iterable[Entity]) -> None:
        self.by_id: dict[str, Entity] = {}
        self.by_name: dict[str, list[str]] = {}
        for entity in entities:
            self.by_id[entity.id] = entity
            self.by_name.setdefault(_name_key(entity.name), []).append(entity.id)

    def __call__(self, ref: str) -> str | None:
        if ref in self.by_id:
            return ref
        ids = self.by_name.get(_name_key(ref), [])
        return ids[0] if len(ids) == 1 else None


@dataclass
class _Valid:
    key: AffectKey
    kind: str
    evidence: set[str]
    sessions: set[str]
    why: str
    downgraded: bool = False


def _validate(
    index: int,
    cand: AffectiveCandidate,
    resolve: _Resolver,
    pool_sessions: Mapping[str, str | None],
    trait_min_sessions: int,
    tally: dict[str, int],
) -> _Valid | DroppedCandidate:
    person, target = resolve(cand.person), resolve(cand.target)
    emotion = _name_key(cand.emotion)
    kind = cand.kind.strip().lower()
    evidence = {e for e in cand.evidence if e in pool_sessions}
    tally["fake"] += len(set(cand.evidence) - evidence)
    if person is None:
        return DroppedCandidate(index=index, reason="unknown person")
    if target is None:
        return DroppedCandidate(index=index, reason="unknown target")
    if not emotion:
        return DroppedCandidate(index=index, reason="empty emotion")
    if kind not in (OCCASION, TRAIT):
        return DroppedCandidate(index=index, reason=f"invalid kind {cand.kind!r}")
    if not evidence:
        return DroppedCandidate(index=index, reason="no real evidence")
    sessions = {s for e in evidence if (s := pool_sessions[e])}
    downgraded = kind == TRAIT and len(sessions) < trait_min_sessions
    if downgraded:
        kind = OCCASION
        tally["downgraded"] += 1
    return _Valid(
        key=(person, target, emotion),
        kind=kind,
        evidence=evidence,
        sessions=sessions,
        why=cand.why.strip(),
        downgraded=downgraded,
    )


def attribute_affect(
    candidates: Sequence[AffectiveCandidate],
    entities: Sequence[Entity],
    pool_sessions: Mapping[str, str | None],
    existing_edges: Iterable[AffectiveEdge],
    existing_traits: Iterable[ExistingTrait],
    *,
    run_id: str,
    trait_min_sessions: int,
    max_relations_per_run: int,
    max_new_traits: int,
) -> AffectivePlan:
    """Plan the edges and traits of a reply; `pool_sessions` maps pool ids to sessions.

    1. Valid candidates only (else `dropped` with the reason): person and target resolve to
       entities (by id, else by unambiguous case/space-insensitive name), emotion non-empty
       (casefolded), evidence cut to real pool ids (`fakeEvidence`) and not empty.
    2. A trait over fewer than `trait_min_sessions` sessions becomes an occasion (`downgraded`).
    3. An occasion whose (person, target, emotion) edge exists and shares a session (or
       evidence) merges into it, before the cap (nothing new: `mergeUnchanged`).
    4. New edges in the LLM's order up to `max_relations_per_run` (`capSkipped`), new traits up
       to `max_new_traits` (`traitsCapSkipped`); same-key candidates fold into the first.
    5. A trait becomes (or refreshes) its pattern memory, its text changing only with new
       evidence; its occasion edges get promotedToTrait and traitSessionCount.
    """
    resolve = _Resolver(entities)
    tally = dict.fromkeys(
        ("fake", "downgraded", "merged", "unchanged", "combined", "created", "capped", "traits_capped"), 0
    )
    valid: list[_Valid] = []
    dropped: list[DroppedCandidate] = []
    for index, cand in enumerate(candidates):
        result = _validate(index, cand, resolve, pool_sessions, trait_min_sessions, tally)
        if isinstance(result, DroppedCandidate):
            dropped.append(result)
        else:
            valid.append(result)

    edges: dict[AffectKey, list[_Group]] = {}
    for edge in sorted(existing_edges, key=lambda e: e.edge_id):
        edges.setdefault((edge.person_id, edge.target_id, edge.emotion), []).append(
            _Group(
                person_id=edge.person_id,
                target_id=edge.target_id,
                emotion=edge.emotion,
                evidence=set(edge.evidence),
                sessions=set(edge.sessions),
                edge_id=edge.edge_id,
                promoted=edge.promoted_to_trait,
                trait_count=edge.trait_session_count,
                last_merged=edge.last_merged_run_id,
            )
        )

    def merge_into_existing(item: _Valid) -> bool:
        for group in edges.get(item.key, []):
            if group.edge_id is not None and group.overlaps(item.evidence, item.sessions):
                grew = group.absorb(item.evidence, item.sessions)
                tally["merged" if grew else "unchanged"] += 1
                group.last_merged, group.touched = run_id, True
                return True
        return False

    pending: list[_Valid] = []
    for item in valid:  # merges first: they never count against the cap
        if item.kind == TRAIT or not merge_into_existing(item):
            pending.append(item)
    traits: dict[AffectKey, _Group] = {}
    known_traits = {t.key: t for t in existing_traits}
    new_edges = new_traits = 0
    for item in pending:
        if item.kind == OCCASION and merge_into_existing(item):  # an edge grew meanwhile
            continue
        if item.kind == OCCASION:
            planned = [g for g in edges.get(item.key, []) if g.edge_id is None]
            group = next((g for g in planned if g.overlaps(item.evidence, item.sessions)), None)
        else:
            group = traits.get(item.key)
        if group is not None:
            group.absorb(item.evidence, item.sessions)
            tally["combined"] += 1
            continue
        if item.kind == OCCASION:
            if new_edges >= max_relations_per_run:
                tally["capped"] += 1
                continue
            new_edges += 1
        elif trait_key(*item.key) not in known_traits:
            if new_traits >= max_new_traits:
                tally["traits_capped"] += 1
                continue
            new_traits += 1
        fresh = _Group(*item.key, evidence=set(item.evidence), sessions=set(item.sessions))
        fresh.why = item.why  # the first candidate's reason stays
        fresh.downgraded = item.downgraded
        if item.kind == OCCASION:
            edges.setdefault(item.key, []).append(fresh)
            tally["created"] += 1
        else:
            traits[item.key] = fresh
    patterns, promoted = _finish_traits(traits, edges, known_traits, resolve)
    return _plan(edges, patterns, dropped, len(candidates), promoted, tally, run_id)


def _finish_traits(
    traits: Mapping[AffectKey, _Group],
    edges: Mapping[AffectKey, list[_Group]],
    known: Mapping[str, ExistingTrait],
    resolve: _Resolver,
) -> tuple[list[TraitPattern], int]:
    patterns: list[TraitPattern] = []
    promoted = 0
    for (person_id, target_id, emotion), group in traits.items():
        count = len(group.sessions)
        for edge in edges.get((person_id, target_id, emotion), []):
            if not edge.promoted or edge.trait_count != count:
                edge.promoted, edge.trait_count, edge.touched = True, count, True
                promoted += edge.edge_id is not None
        patterns.append(
            plan_trait(
                person=resolve.by_id[person_id],
                target=resolve.by_id[target_id],
                emotion=emotion,
                evidence=group.evidence,
                session_count=count,
                why=group.why,
                existing=known.get(trait_key(person_id, target_id, emotion)),
            )
        )
    return patterns, promoted


def _plan(
    edges: Mapping[AffectKey, list[_Group]],
    patterns: list[TraitPattern],
    dropped: list[DroppedCandidate],
    candidates: int,
    promoted: int,
    tally: Mapping[str, int],
    run_id: str,
) -> AffectivePlan:
    groups = [g for key in sorted(edges) for g in edges[key]]
    new_edges = tuple(
        NewAffectiveEdge(
            person_id=g.person_id,
            target_id=g.target_id,
            emotion=g.emotion,
            evidence=tuple(sorted(g.evidence)),
            sessions=tuple(sorted(g.sessions)),
            session_count=len(g.sessions),
            why=g.why,
            run_id=run_id,
            promoted_to_trait=g.promoted,
            trait_session_count=g.trait_count,
            downgraded_from=TRAIT if g.downgraded else None,
        )
        for g in groups
        if g.edge_id is None
    )
    updates = tuple(
        AffectiveEdgeUpdate(
            edge_id=g.edge_id,
            evidence=tuple(sorted(g.evidence)),
            sessions=tuple(sorted(g.sessions)),
            session_count=len(g.sessions),
            last_merged_run_id=g.last_merged,
            promoted_to_trait=g.promoted,
            trait_session_count=g.trait_count,
        )
        for g in groups
        if g.edge_id is not None and g.touched
    )
    refreshed = [p for p in patterns if p.memory_id is not None]
    return AffectivePlan(
        new_edges=new_edges,
        edge_updates=updates,
        trait_patterns=tuple(patterns),
        dropped=tuple(dropped),
        counts=AffectiveResult(
            candidates=candidates,
            dropped=len(dropped),
            fake_evidence=tally["fake"],
            downgraded=tally["downgraded"],
            merged=tally["merged"],
            merge_unchanged=tally["unchanged"],
            combined=tally["combined"],
            created=tally["created"],
            cap_skipped=tally["capped"],
            traits_cap_skipped=tally["traits_capped"],
            traits_created=len(patterns) - len(refreshed),
            traits_refreshed=len(refreshed),
            traits_unchanged=sum(1 for p in refreshed if p.previous_content is None),
            promoted=promoted,
        ),
    )
