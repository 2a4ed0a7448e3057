"""The REST route table: one row per route, the single source of the router and of ``/openapi.json``.

Bodies (POST/PUT/PATCH) and query strings (GET/DELETE) decode into the RPC catalogue's request
Structs; ``{id}`` fills the ``id`` field. ``owner`` is optional on every route: an owner key
acts for its own owner (another one is 403), an operator key names the owner with ``?owner=``,
the ``x-memory-owner`` header or the body's ``owner``. Route shapes are stable once published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memoryd.schemas import conflicts as c
from memoryd.schemas import graph as gr
from memoryd.schemas import memory as m
from memoryd.schemas import ops as o
from memoryd.schemas import retrieval as r

from . import schemas as g
from .studio import embedding as studio_embedding
from .studio import schemas as studio

JSON = "application/json"
NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class Route:
    name: str  # operationId
    method: str
    path: str
    summary: str
    tag: str
    request: type | None  # decoded from the body (POST/PUT/PATCH) or the query string (GET/DELETE)
    result: type | None  # the reply's Struct; None: free-form JSON (the chat proxy)
    op: str | None = None  # the RPC behind it; None: a handler of its own (handlers/special.py)
    operator: bool = False  # operator keys only
    fixed: Mapping[str, Any] = field(default_factory=dict)  # fields the route sets itself
    owner_key_requires: Mapping[str, Any] = field(default_factory=dict)  # what owner keys must send
    reply_media: str = JSON
    body_media: tuple[str, ...] = (JSON,)

    @property
    def in_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH")


ROUTES: tuple[Route, ...] = (
    Route("memories_create", "POST", "/v1/memories", "Create a memory (scope=global: operator keys)", "memories",
          m.MemoryCreateRequest, m.MemoryCreateResult, "memory.create"),
    Route("memories_list", "GET", "/v1/memories", "List memories with filters, pagination and stats", "memories",
          m.MemoryListRequest, m.MemoryListResult, "memory.list"),
    Route("memories_stats", "GET", "/v1/stats", "The owner's memories counted by type, state and source, with tokens",
          "memories", m.MemoryStatsRequest, m.MemoryStatsResult, "memory.stats"),
    Route("memories_clear", "POST", "/v1/memories/clear", "Delete the owner's memories (by type, agent or age)",
          "memories", m.MemoryClearRequest, m.MemoryClearResult, "memory.clear"),
    Route("memories_batch", "POST", "/v1/memories/batch",
          "Add many plain items at once: texts stored as memories, messages published as chat events; "
          "an item that fails gets its own typed error", "memories",
          m.MemoryBatchRequest, m.MemoryBatchResult, "memory.batch"),
    Route("memories_get", "GET", "/v1/memories/{id}", "One memory", "memories",
          m.MemoryGetRequest, m.MemoryGetResult, "memory.get"),
    Route("memories_history", "GET", "/v1/memories/{id}/history", "A memory's text changes, oldest first",
          "memories", m.MemoryHistoryRequest, m.MemoryHistoryResult, "memory.history"),
    Route("memories_update", "PATCH", "/v1/memories/{id}", "Change a memory (only the fields given)", "memories",
          m.MemoryUpdateRequest, m.MemoryUpdateResult, "memory.update"),
    Route("memories_delete", "DELETE", "/v1/memories/{id}", "Delete a memory from every store", "memories",
          m.MemoryDeleteRequest, m.MemoryDeleteResult, "memory.delete"),
    Route("memories_restore", "POST", "/v1/memories/{id}/restore", "Restore a demoted memory's full content",
          "memories", m.MemoryRestoreRequest, m.MemoryRestoreResult, "memory.restore"),
    Route("events_publish", "POST", "/v1/events", "Publish chat traffic (stored, then extracted)", "memories",
          g.ChatPublishRequest, g.ChatPublishResult),
    Route("export", "GET", "/v1/export", "Every memory of the owner as JSON lines (streamed)", "memories",
          g.ExportQuery, None, reply_media=NDJSON),
    Route("import", "POST", "/v1/import", "Import JSON lines as exported (idempotent by id and key)", "memories",
          m.MemoryImportRequest, m.MemoryImportResult, "memory.import", body_media=(JSON, NDJSON)),
    Route("search", "POST", "/v1/search", "Retrieve ranked memories for a query", "retrieval",
          r.RetrieveRequest, r.RetrieveResult, "retrieve"),
    Route("search_preview", "POST", "/v1/search/preview",
          "Retrieve as a dry run: scores, tiers, tokens, ranks and fallbacks, nothing touched", "retrieval",
          r.RetrieveRequest, r.RetrieveResult, "retrieve", fixed={"dry_run": True}),
    Route("inject", "POST", "/v1/inject", "The chat messages with the owner's memory injected", "retrieval",
          r.InjectRequest, r.InjectResult, "inject"),
    Route("summarize", "POST", "/v1/summarize", "Compact old memories into summaries (owner keys: dry runs)",
          "operations", o.SummarizeRequest, o.SummarizeResult, "summarize", owner_key_requires={"dry_run": True}),
    Route("cleanup", "POST", "/v1/cleanup", "Remove expired memories and those past retention", "operations",
          o.CleanupRequest, o.CleanupResult, "cleanup", operator=True),
    Route("reindex", "POST", "/v1/reindex", "Queue re-embedding for the configured model", "operations",
          o.ReindexRequest, o.ReindexResult, "reindex", operator=True),
    Route("reindex_progress", "GET", "/v1/reindex", "Reindex progress (pending memories), queueing nothing",
          "operations", o.ReindexRequest, o.ReindexResult, "reindex", operator=True, fixed={"dry_run": True}),
    Route("engine_status", "GET", "/v1/engine/status", "Retrieval engine: tiers, embedding, stores, pending",
          "operations", o.EngineStatusRequest, o.EngineStatusResult, "engine.status"),
    Route("embedding_models", "GET", "/v1/embedding/models",
          "Embedding sources and models: what embeddingSource accepts, the shipped local model, the remote one",
          "operations", None, studio_embedding.EmbeddingModels),
    Route("health", "GET", "/v1/health", "Deep health of every service (operator keys)", "operations", None,
          g.ServicesHealth),
    Route("settings_get", "GET", "/v1/settings", "Effective settings (owner over global) and their sources",
          "settings", o.SettingsGetRequest, o.SettingsGetResult, "settings.get"),
    Route("settings_put", "PUT", "/v1/settings", "Change settings (global without owner)", "settings",
          o.SettingsPutRequest, o.SettingsPutResult, "settings.put", operator=True),
    Route("sleep_run", "POST", "/v1/sleep/runs", "Queue (and optionally wait for) a consolidation run", "sleep",
          o.SleepRunRequest, o.SleepRunResult, "sleep.run", operator=True),
    Route("sleep_status", "GET", "/v1/sleep/status", "Recent consolidation runs", "sleep",
          o.SleepStatusRequest, o.SleepStatusResult, "sleep.status"),
    Route("sleep_receipts", "GET", "/v1/sleep/receipts", "Receipts of recent consolidation runs", "sleep",
          o.SleepStatusRequest, g.SleepReceiptsResult),
    # the conflict review queue (served by sleep)
    Route("conflicts_list", "GET", "/v1/conflicts", "Conflicts parked for review, and how many are pending", "sleep",
          c.ConflictListRequest, c.ConflictListResult, "conflicts.list"),
    Route("conflicts_resolve", "POST", "/v1/conflicts/{id}/resolve",
          "Resolve a parked conflict: accept one side, merge with new content, or dismiss", "sleep",
          c.ConflictResolveRequest, c.ConflictResolveResult, "conflicts.resolve"),
    # the entity graph sleep builds (read-only)
    Route("entities_list", "GET", "/v1/entities",
          "The owner's entities, most mentioned first (with entity_id: it and its neighbours)", "graph",
          gr.EntityListRequest, gr.EntityListResult, "entities.list"),
    Route("relations_list", "GET", "/v1/relations",
          "The owner's entity relations, newest first; affective edges with their emotion and kind", "graph",
          gr.RelationListRequest, gr.RelationListResult, "entities.relations"),
    Route("whoami", "GET", "/v1/whoami", "The calling API key: its role and the owner it acts for", "keys",
          None, studio.WhoAmI),
    Route("activity", "GET", "/v1/activity", "Counters of chat events, searches and queue lag, sampled now",
          "operations", None, studio.ActivitySample, operator=True),
    Route("activity_history", "GET", "/v1/activity/history",
          "The last hour of activity samples this gateway took (one a minute), oldest first", "operations",
          None, studio.ActivityHistory, operator=True),
    Route("chat_completions", "POST", "/v1/chat/completions",
          "OpenAI-compatible chat with memory: retrieve, inject, forward, then remember the exchange", "proxy",
          None, None),
    Route("responses", "POST", "/v1/responses",
          "OpenAI Responses API with memory: retrieve, inject into instructions, forward, then remember", "proxy",
          None, None),
    Route("models_list", "GET", "/v1/models", "The upstream's models (the key's upstream, else the gateway's)",
          "proxy", None, None),
)  # fmt: skip

BY_NAME: dict[str, Route] = {route.name: route for route in ROUTES}
