"""The review queue's resolutions as pure rules: which request is valid for which pair.

`plan_resolution` turns a request (`accept`, `merge`, `dismiss`) and the pair's memories as
they are now into a `ReviewPlan`, or raises the typed error a caller can act on: a missing
or stray field (400), a side that is no longer active (409), a change to a global memory (403:
only the operator's `admin.memory.*` writes change one). Accept and merge archive the other
side into the kept one; dismiss changes no memory and only records the pair as judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.errors import Conflict, Forbidden, ValidationFailed


@dataclass(frozen=True)
class Side:
    """One memory of the pair, read under its row lock."""

    id: str
    state: str
    scope: str
    content: str


@dataclass(frozen=True)
class ReviewPlan:
    action: str
    keep: str | None = None
    archive: str | None = None
    content: str | None = None  # merge: the kept memory's new text


def _canonical(memory_id: str) -> str:
    return memory_id.replace("-", "").lower()


def plan_resolution(
    action: str, keep: str | None, content: str | None, pair: tuple[str, str], sides: Mapping[str, Side]
) -> ReviewPlan:
    """The plan of one resolution of the pair ``(a, b)``; ``sides`` holds those of its memories that exist."""
    if action == "dismiss":
        if keep is not None or content is not None:
            raise ValidationFailed.at("$.action", "dismiss keeps both memories: send neither `keep` nor `content`")
        return ReviewPlan(action="dismiss")
    if keep is None:
        raise ValidationFailed.at("$.keep", f"{action} needs `keep`: the id of the memory that stays")
    by_canonical = {_canonical(i): i for i in pair}
    kept = by_canonical.get(_canonical(keep))
    if kept is None:
        raise ValidationFailed.at("$.keep", f"`keep` must be one of the pair: {pair[0]} or {pair[1]}")
    if action == "accept" and content is not None:
        raise ValidationFailed.at("$.content", "accept keeps the memory's text: use merge to give new content")
    if action == "merge" and content is None:
        raise ValidationFailed.at("$.content", "merge needs `content`: the kept memory's new text")
    gone = pair[1] if kept == pair[0] else pair[0]
    for memory_id in pair:
        side = sides.get(memory_id)
        if side is None or side.state != "active":
            state = side.state if side else "deleted"
            raise Conflict(f"memory {memory_id} is {state}, not active: only dismiss resolves this entry now")
    if sides[gone].scope == "global":
        raise Forbidden(f"memory {gone} is global: only the operator changes it (keep it, or dismiss)")
    if action == "merge" and sides[kept].scope == "global":
        raise Forbidden(f"memory {kept} is global: its text changes only through admin.memory.update")
    return ReviewPlan(action=action, keep=kept, archive=gone, content=content)
