"""Affective traits as pattern memories: key, title, content and refresh-in-place rule.

A confirmed trait (evidence from enough distinct sessions) becomes a `pattern` memory with
upsert key `affect:<person id>:<target id>:<emotion>` and the title
"<person> feels <emotion> about <target>", so the title names the target and one person
with two targets gets two patterns. An existing trait pattern is refreshed in place: its
text changes only when the trait brings evidence it did not have (old text then goes to
content_history), so a replay of the same evidence leaves it unchanged.
"""

from collections.abc import Set

import msgspec

from services.sleep.logic.relations import Entity


class ExistingTrait(msgspec.Struct, frozen=True, kw_only=True):
    """A stored trait pattern memory (evidence from its metadata)."""

    memory_id: str
    key: str
    content: str
    evidence: tuple[str, ...] = ()


class TraitPattern(msgspec.Struct, frozen=True, kw_only=True):
    """Create (memory_id None) or refresh a trait pattern; previous_content -> history."""

    key: str
    title: str
    content: str
    person_id: str
    target_id: str
    emotion: str
    evidence: tuple[str, ...]
    session_count: int
    memory_id: str | None = None
    previous_content: str | None = None


def trait_key(person_id: str, target_id: str, emotion: str) -> str:
    """The memory upsert key of a trait pattern."""
    return f"affect:{person_id}:{target_id}:{emotion}"


def trait_title(person_name: str, emotion: str, target_name: str) -> str:
    return f"{person_name} feels {emotion} about {target_name}"


def plan_trait(
    *,
    person: Entity,
    target: Entity,
    emotion: str,
    evidence: Set[str],
    session_count: int,
    why: str,
    existing: ExistingTrait | None,
) -> TraitPattern:
    """The create or refresh plan of one confirmed trait."""
    title = trait_title(person.name, emotion, target.name)
    content = f"{title}." + (f" {why}" if why else "")
    memory_id = previous = None
    merged = set(evidence)
    if existing is not None:
        memory_id = existing.memory_id
        known = set(existing.evidence)
        if evidence - known and content != existing.content:
            previous = existing.content
        else:
            content = existing.content
        merged |= known
    return TraitPattern(
        key=trait_key(person.id, target.id, emotion),
        title=title,
        content=content,
        person_id=person.id,
        target_id=target.id,
        emotion=emotion,
        evidence=tuple(sorted(merged)),
        session_count=session_count,
        memory_id=memory_id,
        previous_content=previous,
    )
