"""The RPC catalogue: each operation's subject suffix, request and result type, and server.

One table, used by the servers (to decode requests), by ``MemoryClient`` (to decode
replies) and by the JSON Schema export.
"""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.schemas import conflicts as c
from memoryd.schemas import dlq as d
from memoryd.schemas import graph as gr
from memoryd.schemas import memory as m
from memoryd.schemas import ops as o
from memoryd.schemas import retrieval as r
from memoryd.schemas.base import Wire


@dataclass(frozen=True)
class RpcOp:
    name: str  # subject suffix: mem.v1.rpc.<name>
    request: type[Wire]
    result: type[Wire]
    service: str  # which service serves it


RPC_OPS: dict[str, RpcOp] = {
    op.name: op
    for op in (
        RpcOp("memory.create", m.MemoryCreateRequest, m.MemoryCreateResult, "ingest"),
        # operator only (NATS permissions): the one way to create scope=global memories
        RpcOp("admin.memory.create", m.MemoryCreateRequest, m.MemoryCreateResult, "ingest"),
        # operator only, like admin.memory.create: the only writes that may touch a global memory
        RpcOp("admin.memory.update", m.MemoryUpdateRequest, m.MemoryUpdateResult, "ingest"),
        RpcOp("admin.memory.restore", m.MemoryRestoreRequest, m.MemoryRestoreResult, "ingest"),
        RpcOp("admin.memory.delete", m.MemoryDeleteRequest, m.MemoryDeleteResult, "ingest"),
        RpcOp("admin.memory.import", m.MemoryImportRequest, m.MemoryImportResult, "ingest"),
        RpcOp("memory.get", m.MemoryGetRequest, m.MemoryGetResult, "ingest"),
        RpcOp("memory.history", m.MemoryHistoryRequest, m.MemoryHistoryResult, "ingest"),
        RpcOp("memory.update", m.MemoryUpdateRequest, m.MemoryUpdateResult, "ingest"),
        RpcOp("memory.delete", m.MemoryDeleteRequest, m.MemoryDeleteResult, "ingest"),
        RpcOp("memory.restore", m.MemoryRestoreRequest, m.MemoryRestoreResult, "ingest"),
        RpcOp("memory.list", m.MemoryListRequest, m.MemoryListResult, "ingest"),
        RpcOp("memory.stats", m.MemoryStatsRequest, m.MemoryStatsResult, "ingest"),
        RpcOp("memory.clear", m.MemoryClearRequest, m.MemoryClearResult, "ingest"),
        RpcOp("memory.export", m.MemoryExportRequest, m.MemoryExportResult, "ingest"),
        RpcOp("memory.import", m.MemoryImportRequest, m.MemoryImportResult, "ingest"),
        RpcOp("memory.batch", m.MemoryBatchRequest, m.MemoryBatchResult, "ingest"),
        RpcOp("summarize", o.SummarizeRequest, o.SummarizeResult, "ingest"),
        RpcOp("cleanup", o.CleanupRequest, o.CleanupResult, "ingest"),
        # operator only (NATS permissions): the dead-letter queue
        RpcOp("admin.dlq.list", d.DlqListRequest, d.DlqListResult, "ingest"),
        RpcOp("admin.dlq.show", d.DlqShowRequest, d.DlqShowResult, "ingest"),
        RpcOp("admin.dlq.replay", d.DlqReplayRequest, d.DlqReplayResult, "ingest"),
        RpcOp("admin.dlq.drop", d.DlqDropRequest, d.DlqDropResult, "ingest"),
        RpcOp("settings.get", o.SettingsGetRequest, o.SettingsGetResult, "ingest"),
        RpcOp("settings.put", o.SettingsPutRequest, o.SettingsPutResult, "ingest"),
        RpcOp("retrieve", r.RetrieveRequest, r.RetrieveResult, "retrieve"),
        RpcOp("inject", r.InjectRequest, r.InjectResult, "retrieve"),
        RpcOp("engine.status", o.EngineStatusRequest, o.EngineStatusResult, "retrieve"),
        RpcOp("embed", r.EmbedRequest, r.EmbedResult, "embed"),
        RpcOp("reindex", o.ReindexRequest, o.ReindexResult, "embed"),
        RpcOp("sleep.run", o.SleepRunRequest, o.SleepRunResult, "sleep"),
        RpcOp("sleep.status", o.SleepStatusRequest, o.SleepStatusResult, "sleep"),
        # the conflict review queue: sleep owns conflict_pending and the archive/merge writes
        RpcOp("conflicts.list", c.ConflictListRequest, c.ConflictListResult, "sleep"),
        RpcOp("conflicts.resolve", c.ConflictResolveRequest, c.ConflictResolveResult, "sleep"),
        # the entity graph consolidation builds (read-only)
        RpcOp("entities.list", gr.EntityListRequest, gr.EntityListResult, "sleep"),
        RpcOp("entities.relations", gr.RelationListRequest, gr.RelationListResult, "sleep"),
    )
}

#: Every service answers ``mem.v1.rpc.health.<service>`` (and the shared ``health``
#: subject in its queue group, so a plain ``health`` request reaches some service).
HEALTH_OP = RpcOp("health", o.HealthRequest, o.HealthResult, "*")


def ops_of(service: str) -> list[RpcOp]:
    """The operations one service serves."""
    return [op for op in RPC_OPS.values() if op.service == service]
