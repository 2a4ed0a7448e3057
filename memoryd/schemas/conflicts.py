"""The conflict review queue: pairs sleep parked for a person, listed and resolved.

Sleep parks a pair (`conflict_pending`) when it involves a global memory or when
`conflictFreezeEnabled` holds back adjudication. `conflicts.list` shows the pending pairs
(or the resolved ones with their receipts) and counts the pending ones; `conflicts.resolve`
settles one: `accept` keeps one side and archives the other (`mergedInto`), `merge` keeps one
side with new content and archives the other, `dismiss` keeps both and records the pair as
judged, so sleep does not park it again until a side changes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from memoryd.schemas.base import Content, MemoryId, Owner, Wire

ConflictStatus = Literal["pending", "resolved"]
ResolveAction = Literal["accept", "merge", "dismiss"]
#: Who resolved it, as the caller names itself (``cli:alice``, ``studio``).
Resolver = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"\S")]


class ConflictSide(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One memory of a parked pair as it is now (``state`` may have changed since it was parked)."""

    id: str
    content: str
    state: str
    scope: str
    updated_at: datetime


class ConflictReceipt(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a resolution changed, by whom and when; stored with the queue entry."""

    conflict_id: str
    action: ResolveAction
    resolved_by: str
    resolved_at: datetime
    kept: str | None = None  # accept/merge: the memory that stays
    archived: str | None = None  # accept/merge: the memory archived into `kept`
    content_before: str | None = None  # merge: the kept memory's text before (also in its history)
    content_after: str | None = None  # merge: its new text


class ConflictItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    owner: str
    reason: str
    created_at: datetime
    a: ConflictSide
    b: ConflictSide
    run_id: str | None = None
    receipt: ConflictReceipt | None = None  # resolved entries only


class ConflictListRequest(Wire, frozen=True):
    owner: Owner
    status: ConflictStatus = "pending"
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 50


class ConflictListResult(Wire, frozen=True):
    items: list[ConflictItem]
    #: the owner's pending entries in all (the listing may stop at `limit`)
    pending: int


class ConflictResolveRequest(Wire, frozen=True):
    owner: Owner
    id: MemoryId  # the queue entry
    action: ResolveAction
    #: accept/merge: the memory that stays (one of the pair)
    keep: MemoryId | None = None
    #: merge: the kept memory's new text
    content: Content | None = None
    resolved_by: Resolver = "api"


class ConflictResolveResult(Wire, frozen=True):
    receipt: ConflictReceipt
    #: the owner's pending entries left
    pending: int
