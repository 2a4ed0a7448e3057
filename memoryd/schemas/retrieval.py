"""Retrieval, injection and query-embedding RPCs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from memoryd.schemas.base import (
    MAX_QUERY_CHARS,
    AgentId,
    Limit,
    MemoryScope,
    MemoryType,
    Owner,
    SessionId,
    Strategy,
    Wire,
)
from memoryd.schemas.events import ChatMessage

Tier = Literal["keyword", "pgvector", "qdrant", "recent"]
#: The largest token budget of one retrieval: requests and the owner's ``maxTokens`` setting alike.
MAX_TOKENS_LIMIT = 8000
#: A token budget; 0 retrieves nothing.
MaxTokens = Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS_LIMIT)]
Query = Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]


class RetrieveRequest(Wire, frozen=True):
    owner: Owner
    query: Query = ""
    session_id: SessionId | None = None
    #: only this agent's memories of the owner (and the global ones); None: every agent's
    agent_id: AgentId | None = None
    strategy: Strategy | None = None
    max_tokens: MaxTokens | None = None
    limit: Limit = 20
    types: list[MemoryType] | None = None
    dry_run: bool = False
    no_memory: bool = False
    #: minimum relevance: a result's vector similarity (cosine, ``vec_score``) must reach it,
    #: unless the keyword tier matched the query's words; None returns every ranked result
    threshold: Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)] | None = None
    #: metadata conditions every result meets: ``{"project": "web"}``, ``{"k": {"in": [...]}}``,
    #: ``{"AND": [...]}`` / ``{"OR": [...]}`` (see shared/metadata_filter.py)
    filters: dict[str, Any] | None = None


class RetrievedMemory(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    content: str
    memory_type: MemoryType
    created_at: datetime
    score: float
    tier: Tier
    tokens: int
    session_id: str | None = None
    agent_id: str | None = None
    scope: MemoryScope = "apiKey"
    fts_score: float | None = None
    vec_score: float | None = None
    fts_rank: int | None = None
    vec_rank: int | None = None
    metadata: dict[str, Any] = {}


class TierReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One tier's part in a retrieval: did it serve, how long, and why not."""

    tier: Tier
    served: bool
    ms: float
    reason: str | None = None
    hits: int | None = None  # candidates this tier returned (None: it did not run)


class RetrieveResult(Wire, frozen=True):
    memories: list[RetrievedMemory]
    strategy: Literal["exact", "semantic", "hybrid"]
    tokens_used: int
    tiers: list[TierReport] = []
    fallbacks: list[str] = []
    disabled_reason: str | None = None
    ms: float | None = None  # time the service spent on the request
    embed_ms: float | None = None  # of which the query embedding (embed RPC round trip)


class InjectRequest(Wire, frozen=True):
    owner: Owner
    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1)]
    provider: str | None = None
    model: str | None = None
    session_id: SessionId | None = None
    agent_id: AgentId | None = None
    query: Query | None = None
    strategy: Strategy | None = None
    max_tokens: MaxTokens | None = None
    no_memory: bool = False


class InjectResult(Wire, frozen=True):
    messages: list[ChatMessage]
    placement: Literal["system", "user", "none"]
    injected: list[RetrievedMemory] = []
    context: str = ""
    retrieval: RetrieveResult | None = None


class EmbedRequest(Wire, frozen=True):
    texts: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]], msgspec.Meta(min_length=1, max_length=256)
    ]
    #: whose query this is (set by the retrieve service): the cache keeps the owner's entries apart
    owner: str | None = None


class EmbedResult(Wire, frozen=True):
    vectors: list[list[float]]
    signature: str
    dim: int
    cached: int = 0
