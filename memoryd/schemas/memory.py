"""The memory record and the memory CRUD RPCs (served by ingest)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from memoryd.schemas.base import (
    AgentId,
    Content,
    Limit,
    MemoryId,
    MemoryKey,
    MemoryScope,
    MemorySource,
    MemoryState,
    MemoryType,
    Offset,
    Owner,
    Page,
    SessionId,
    Wire,
)
from memoryd.schemas.events import ChatMessage

Days = Annotated[int, msgspec.Meta(ge=0, le=36_500)]


class MemoryRecord(Wire, frozen=True):
    """A memory as stored (and exported).

    The memory's type is `memory_type` on the wire: `type` is the message tag.
    """

    id: str
    owner: str
    memory_type: MemoryType
    content: str
    source: MemorySource
    state: MemoryState
    created_at: datetime
    updated_at: datetime
    content_hash: str
    scope: MemoryScope = "apiKey"
    key: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] = {}
    last_accessed_at: datetime | None = None
    expires_at: datetime | None = None
    full_content: str | None = None
    embedding_signature: str | None = None
    needs_reindex: bool = False


class DeletionReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """What a deletion removed from each store, so an operator can prove it."""

    rows: int = 0
    pgvector_vectors: int = 0
    qdrant_points: int = 0
    history_rows: int = 0
    #: summaries and patterns built from the deleted memories, deleted with them
    derived_memories: int = 0
    #: other members of a deleted summary, given their own text back (active again)
    restored_members: int = 0
    #: entities only the deleted memories mentioned
    entities: int = 0
    #: differentiated_pairs / conflict_reviewed / conflict_pending rows naming them
    pair_rows: int = 0
    #: LLM audit errors that quoted them, redacted
    audit_redacted: int = 0
    #: dead letters holding their id or text, removed from the DLQ
    dlq_messages: int = 0
    #: vector points whose store could not be reached: the orphan sweep removes them
    pending_points: int = 0
    #: points (or vectors) found without a row by the orphan sweep, removed
    orphan_points: int = 0

    def plus(self, other: DeletionReceipt) -> DeletionReceipt:
        """The receipt of both deletions (receipts of chunks, owners or summary groups add up)."""
        fields = self.__struct_fields__
        return DeletionReceipt(**{f: getattr(self, f) + getattr(other, f) for f in fields})


# --- create / get / update / delete --------------------------------------------------------
class MemoryCreateRequest(Wire, frozen=True):
    owner: Owner
    content: Content
    memory_type: MemoryType = "factual"
    key: MemoryKey | None = None
    session_id: SessionId | None = None
    agent_id: AgentId | None = None
    metadata: dict[str, Any] = {}
    expires_at: datetime | None = None
    scope: MemoryScope = "apiKey"


class MemoryCreateResult(Wire, frozen=True):
    memory: MemoryRecord
    created: bool


class MemoryGetRequest(Wire, frozen=True):
    owner: Owner
    id: MemoryId


class MemoryGetResult(Wire, frozen=True):
    memory: MemoryRecord


class MemoryUpdateRequest(Wire, frozen=True):
    """Partial update: only the fields given change."""

    owner: Owner
    id: MemoryId
    content: Content | None = None
    memory_type: MemoryType | None = None
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    session_id: SessionId | None = None


class MemoryUpdateResult(Wire, frozen=True):
    memory: MemoryRecord
    reembed: bool


class MemoryDeleteRequest(Wire, frozen=True):
    owner: Owner
    id: MemoryId


class MemoryDeleteResult(Wire, frozen=True):
    id: str
    removed: DeletionReceipt


class MemoryHistoryRequest(Wire, frozen=True):
    owner: Owner
    id: MemoryId
    limit: Limit = 100


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One change of a memory's text: what it was, what it became, why and when.

    ``reason``: ``api_update``, or the consolidation decision that changed it (``run_id`` set).
    """

    old_content: str
    new_content: str
    reason: str
    changed_at: datetime
    run_id: str | None = None


class MemoryHistoryResult(Wire, frozen=True):
    """The memory's text changes, oldest first (the last ``new_content`` is its text now)."""

    id: str
    content: str
    entries: list[HistoryEntry] = []


class MemoryRestoreRequest(Wire, frozen=True):
    owner: Owner
    id: MemoryId


class MemoryRestoreResult(Wire, frozen=True):
    memory: MemoryRecord


# --- list / clear ---------------------------------------------------------------------------
class MemoryListRequest(Wire, frozen=True):
    owner: Owner
    memory_type: MemoryType | None = None
    session_id: SessionId | None = None
    #: only this agent's memories; None: every agent's
    agent_id: AgentId | None = None
    q: Annotated[str, msgspec.Meta(max_length=2_000)] | None = None
    state: MemoryState | None = None
    source: MemorySource | None = None
    #: only what this chat event stored: its turns and the facts extracted from them
    event_id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    #: metadata conditions, as ``RetrieveRequest.filters`` (over REST: JSON in ``?filters=``)
    filters: dict[str, Any] | None = None
    limit: Limit = 50
    offset: Offset = 0
    page: Page | None = None


class MemoryListResult(Wire, frozen=True):
    memories: list[MemoryRecord]
    total: int
    tokens_used: int
    hit_rate: float
    #: with ``event_id``: whether the event is fully processed (ingested, and its new turns'
    #: extraction committed); its memories may still be waiting for their vectors
    event_processed: bool | None = None


class MemoryStatsRequest(Wire, frozen=True):
    owner: Owner


class MemoryStatsResult(Wire, frozen=True):
    """The owner's memories counted by type, state and source; ``tokens`` as ``ceil(len/4)``;
    ``last_activity``: the newest change or recall of any of them."""

    total: int
    tokens: int
    by_type: dict[str, int] = {}
    by_state: dict[str, int] = {}
    by_source: dict[str, int] = {}
    last_activity: datetime | None = None


class MemoryClearRequest(Wire, frozen=True):
    """Delete the owner's memories (every store): all of them, or those of one type, agent or age."""

    owner: Owner
    memory_type: MemoryType | None = None
    older_than_days: Days | None = None
    #: only this agent's memories
    agent_id: AgentId | None = None


class MemoryClearResult(Wire, frozen=True):
    count: int
    removed: DeletionReceipt


# --- export / import -------------------------------------------------------------------------
class MemoryExportRequest(Wire, frozen=True):
    """One page of the owner's memories in id order; ``after_id`` continues a previous page."""

    owner: Owner
    include_archived: bool = True
    after_id: MemoryId | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 1000


class MemoryExportResult(Wire, frozen=True):
    """``lines``: one JSON-encoded ``MemoryRecord`` per line.

    ``next_after_id`` is set when more memories follow (pages are also cut by size).
    """

    lines: str
    count: int
    next_after_id: str | None = None


class ImportLineError(msgspec.Struct, frozen=True, kw_only=True):
    line: int
    error: str


class MemoryImportRequest(Wire, frozen=True):
    """``lines``: JSON lines of ``MemoryRecord`` (as exported); idempotent by id/key."""

    owner: Owner
    lines: str


class MemoryImportResult(Wire, frozen=True):
    imported: int
    updated: int
    unchanged: int
    errors: list[ImportLineError] = []


# --- batch -----------------------------------------------------------------------------------
MAX_BATCH_ITEMS = 100


class BatchItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One item of a batch: ``content`` (stored as one memory, as ``memory.create`` stores it) or
    ``messages`` (published as one chat event: its turns are stored and facts extracted from them).

    The fields are checked item by item (a missing or over-long ``content``, an unknown
    ``memory_type``, a taken ``key``, a full quota fail only their item); ``event_id`` makes a
    retried messages item one event.
    """

    content: str | None = None
    messages: list[ChatMessage] | None = None
    memory_type: str | None = None
    key: str | None = None
    metadata: dict[str, Any] = {}
    session_id: str | None = None
    agent_id: str | None = None
    expires_at: datetime | None = None
    event_id: str | None = None


class BatchItemError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why one item failed: the code and ``err_code`` of ``memoryd.errors`` (as ``RpcError``);
    ``field`` is the offending field's path within the request (``$.items[2].content``)."""

    code: int
    err_code: str
    description: str
    field: str | None = None
    error_id: str | None = None


class BatchItemResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What became of item ``index``: the stored ``memory`` (``created`` false: an existing
    memory with the same ``key`` was updated or unchanged), the published ``event_id``
    (``duplicate``: published before), or the ``error``."""

    index: int
    memory: MemoryRecord | None = None
    created: bool | None = None
    event_id: str | None = None
    duplicate: bool | None = None
    error: BatchItemError | None = None


class MemoryBatchRequest(Wire, frozen=True):
    """Up to ``MAX_BATCH_ITEMS`` plain items in one round trip, done in order, each on its own."""

    owner: Owner
    items: Annotated[list[BatchItem], msgspec.Meta(min_length=1, max_length=MAX_BATCH_ITEMS)]


class MemoryBatchResult(Wire, frozen=True):
    """One result per item, in the request's order; ``stored`` memories, ``published`` events
    and ``failed`` items counted."""

    results: list[BatchItemResult]
    stored: int
    published: int
    failed: int
