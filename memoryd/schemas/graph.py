"""The entity graph read-outs: an owner's entities and the edges between them.

Consolidation builds the graph (relation completion adds ``related_to|part_of|depends_on``
edges, affective attribution adds ``affective_context`` edges carrying an emotion); these
messages only read it, one page at a time, optionally around one entity.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from memoryd.schemas.base import Limit, MemoryId, Offset, Owner, Wire

#: ``relation`` of the emotion edges sleep's affective phase writes (person -> target).
AFFECTIVE_RELATION = "affective_context"
#: An affective edge's kind: one occasion, or promoted to a trait (seen across sessions).
AffectKind = Literal["occasion", "trait"]
#: free text that goes into SQL as a parameter: anything but NUL (PostgreSQL text cannot hold it)
FilterText = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
RelationName = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[a-z_]+$(?!\n)")]


class EntityRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    name: str
    kind: str
    mentions: int = 0
    #: edges touching this entity (all relations, affective ones included)
    degree: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None


class RelationRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    source_id: str
    target_id: str
    source_name: str
    target_name: str
    relation: str
    #: affective edges only: the emotion and whether it is an occasion or a trait
    emotion: str | None = None
    affect: AffectKind | None = None
    #: the edge's evidence: memory ids (affective edges) and, when inferred, its weight
    evidence: list[str] = []
    weight: int | None = None
    metadata: dict[str, Any] = {}
    run_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class EntityListRequest(Wire, frozen=True):
    """The owner's entities, most mentioned first; with ``entity_id`` that entity and its neighbours."""

    owner: Owner
    entity_id: MemoryId | None = None
    #: name contains this text (case-insensitive)
    q: FilterText | None = None
    kind: FilterText | None = None
    limit: Limit = 100
    offset: Offset = 0


class EntityListResult(Wire, frozen=True):
    entities: list[EntityRecord]
    total: int


class RelationListRequest(Wire, frozen=True):
    """The owner's edges, newest first; with ``entity_id`` only those touching that entity."""

    owner: Owner
    entity_id: MemoryId | None = None
    relation: RelationName | None = None
    limit: Limit = 100
    offset: Offset = 0


class RelationListResult(Wire, frozen=True):
    relations: list[RelationRecord]
    total: int
