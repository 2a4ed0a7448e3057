"""What the fuzz tests send: one valid example per RPC operation and per consumed stream subject.

Hostile payloads are derived from these examples (``tests.support.hostile``), so each
example sets its optional fields too (``omit_defaults`` would otherwise leave nothing to
break). ``rpc_examples`` must name every operation of ``RPC_OPS``; a test checks it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from memoryd.codec import decode
from memoryd.schemas import RPC_OPS, ChatEvent, ChatMessage, EmbedJob, ExtractJob, SleepRun, Wire, dlq
from memoryd.schemas import conflicts as c
from memoryd.schemas import graph as gr
from memoryd.schemas import memory as m
from memoryd.schemas import ops as o
from memoryd.schemas import retrieval as r
from memoryd.schemas.events import Activity, Turn
from memoryd.subjects import (
    CHAT_EVENTS,
    EMBED_CONSUMER,
    EMBED_JOBS,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    EXTRACT_JOBS,
    INGEST_CONSUMER,
    JOBS_STREAM,
    SLEEP_CONSUMER,
    SLEEP_JOBS,
    SLEEP_STREAM,
    owner_events_subject,
)
from shared.service_names import BACKEND_SERVICES
from shared.settings.memory import MemorySettings
from shared.settings.sleep import SleepSettings

OWNER = "fuzz-owner"
CLEAR_OWNER = "fuzz-clear"  # what memory.clear may wipe: nobody else's seeds
SETTINGS_OWNER = "fuzz-settings"  # whose settings the fuzz changes (not the owner the reads use)
ACTIVITY_OWNER = "fuzz-activity"  # no memories: its sleep runs are quick
SERVICES = BACKEND_SERVICES
WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Seeds:
    """Memories the examples point at (created through the API before fuzzing)."""

    memory_id: str
    content_hash: str
    export_line: str  # one line of memory.export of the owner
    dlq_seq: int = 1  # a dead letter put in the DLQ for admin.dlq.show


def every_owner_setting() -> dict[str, Any]:
    """Every memory and sleep setting an owner may set, at its default (a model name for the
    one without): each one gets broken in turn. Engine settings are global-only, left out."""
    values = msgspec.to_builtins(MemorySettings()) | msgspec.to_builtins(SleepSettings())
    return {**values, "sleepLlmModel": "fake"}


def rpc_examples(seeds: Seeds) -> dict[str, Wire]:
    """A valid request per RPC operation, every optional field set."""
    later = WHEN + timedelta(days=3650)
    record = m.MemoryCreateRequest(
        owner=OWNER,
        content="I prefer green tea in the morning.",
        memory_type="factual",
        key="fuzz-drink",
        session_id="s1",
        metadata={"k": "v", "n": [1, 2]},
        expires_at=later,
    )
    return {
        "memory.create": record,
        "admin.memory.create": m.MemoryCreateRequest(
            owner=OWNER, content="Office hours are 9 to 5.", key="fuzz-global", metadata={"k": "v"}, scope="global"
        ),
        "memory.get": m.MemoryGetRequest(owner=OWNER, id=seeds.memory_id),
        "memory.history": m.MemoryHistoryRequest(owner=OWNER, id=seeds.memory_id),
        "memory.update": m.MemoryUpdateRequest(
            owner=OWNER,
            id=seeds.memory_id,
            content="I prefer green tea, no sugar.",
            memory_type="factual",
            metadata={"k": "w"},
            expires_at=later,
            session_id="s1",
        ),
        "admin.memory.update": m.MemoryUpdateRequest(
            owner=OWNER, id=seeds.memory_id, content="Office hours are 9 to 6."
        ),
        "admin.memory.restore": m.MemoryRestoreRequest(owner=OWNER, id=seeds.memory_id),
        "admin.memory.import": m.MemoryImportRequest(owner=OWNER, lines=seeds.export_line),
        "memory.delete": m.MemoryDeleteRequest(owner=OWNER, id=seeds.memory_id),  # the test gives it one of its own
        "admin.memory.delete": m.MemoryDeleteRequest(owner=OWNER, id=seeds.memory_id),  # as memory.delete
        "memory.restore": m.MemoryRestoreRequest(owner=OWNER, id=seeds.memory_id),  # and an archived one here
        "memory.list": m.MemoryListRequest(
            owner=OWNER,
            memory_type="factual",
            session_id="s1",
            q="tea",
            state="active",
            source="api",
            limit=10,
            offset=1,
            page=1,
        ),
        "memory.stats": m.MemoryStatsRequest(owner=OWNER),
        "memory.clear": m.MemoryClearRequest(owner=CLEAR_OWNER, memory_type="factual", older_than_days=30),
        "memory.export": m.MemoryExportRequest(
            owner=OWNER, include_archived=False, after_id=str(uuid.UUID(int=0)), limit=10
        ),
        "memory.import": m.MemoryImportRequest(owner=OWNER, lines=seeds.export_line),
        "memory.batch": m.MemoryBatchRequest(
            owner=OWNER,
            items=[
                m.BatchItem(content="Takes the train", memory_type="episodic", key="commute", metadata={"a": 1}),
                m.BatchItem(messages=[ChatMessage(role="user", content="I prefer tea.")], event_id="fuzz-batch"),
            ],
        ),
        "summarize": o.SummarizeRequest(older_than_days=30, owner=OWNER, session_id="s1", dry_run=True),
        "cleanup": o.CleanupRequest(owner=OWNER, dry_run=True),
        "settings.get": o.SettingsGetRequest(owner=OWNER),
        "settings.put": o.SettingsPutRequest(owner=SETTINGS_OWNER, values=every_owner_setting()),
        "retrieve": r.RetrieveRequest(
            owner=OWNER,
            query="what do I drink",
            session_id="s1",
            strategy="hybrid",
            max_tokens=500,
            limit=5,
            types=["factual", "episodic"],
            dry_run=True,
        ),
        "inject": r.InjectRequest(
            owner=OWNER,
            messages=[
                ChatMessage(role="system", content="You are helpful."),
                ChatMessage(role="user", content="What do I drink?", name="sam"),
            ],
            provider="openai",
            model="gpt-x",
            session_id="s1",
            query="drink",
            strategy="semantic",
            max_tokens=300,
        ),
        "engine.status": o.EngineStatusRequest(owner=OWNER),
        "embed": r.EmbedRequest(texts=["green tea", "I prefer coffee"]),
        "reindex": o.ReindexRequest(owner=OWNER, batch_size=16, dry_run=True),
        "sleep.run": o.SleepRunRequest(owner=ACTIVITY_OWNER, wait=True, timeout_s=10),
        "sleep.status": o.SleepStatusRequest(owner=OWNER, limit=5),
        "conflicts.list": c.ConflictListRequest(owner=OWNER, status="pending", limit=10),
        # the RPC test gives it an entry of its own (no such entry here: 404)
        "conflicts.resolve": c.ConflictResolveRequest(
            owner=OWNER,
            id=str(uuid.UUID(int=1)),
            action="merge",
            keep=seeds.memory_id,
            content="Office hours are 9 to 5.",
            resolved_by="fuzz",
        ),
        "entities.list": gr.EntityListRequest(
            owner=OWNER, entity_id=str(uuid.UUID(int=1)), q="tea", kind="thing", limit=10, offset=1
        ),
        "entities.relations": gr.RelationListRequest(
            owner=OWNER, entity_id=str(uuid.UUID(int=1)), relation="related_to", limit=10, offset=1
        ),
        # sequence numbers far past anything the run dead-letters: nothing is replayed or dropped
        "admin.dlq.list": dlq.DlqListRequest(stage="ingest", limit=5),
        "admin.dlq.show": dlq.DlqShowRequest(seq=seeds.dlq_seq),
        "admin.dlq.replay": dlq.DlqReplayRequest(seqs=[999_999], stage="ingest"),
        "admin.dlq.drop": dlq.DlqDropRequest(seqs=[999_998], stage="ingest"),
    }


def owner_of(op_name: str) -> str:
    """The owner of an operation's example (and so of its owner-bound subject)."""
    return CLEAR_OWNER if op_name == "memory.clear" else OWNER


def embedded_documents(seeds: Seeds) -> dict[str, dict[str, Wire]]:
    """String fields holding documents of their own: the JSON lines of ``memory.import``."""
    doc = {"lines": decode(seeds.export_line, m.MemoryRecord)}
    return {"memory.import": doc, "admin.memory.import": doc}


HEALTH_EXAMPLE = o.HealthRequest(deep=True)


@dataclass(frozen=True)
class StreamTarget:
    """A JetStream subject a service consumes, the type its consumer decodes, and which consumer."""

    subject: str
    stage: str
    stream: str
    durable: str
    example: Wire


def stream_targets(seeds: Seeds) -> list[StreamTarget]:
    event = ChatEvent(
        event_id="fuzz-ev-1",
        owner=OWNER,
        messages=[
            ChatMessage(role="user", content="I prefer oolong tea. I'll use Rust for the fuzz project."),
            ChatMessage(role="assistant", content="Noted.", name="bot"),
        ],
        occurred_at=WHEN,
        session_id="s1",
        provider="openai",
        model="gpt-x",
        metadata={"k": "v"},
    )
    extract = ExtractJob(
        event_id="fuzz-ev-x",
        owner=OWNER,
        turns=[Turn(role="user", content="I always commit before pushing.", memory_id=seeds.memory_id, speaker="sam")],
        occurred_at=WHEN,
        session_id="s1",
    )
    embed = EmbedJob(memory_id=seeds.memory_id, owner=OWNER, content_hash=seeds.content_hash, reason="update")
    sleep = SleepRun(owner=ACTIVITY_OWNER, run_id=str(uuid.UUID(int=7)), reason="manual", requested_at=WHEN, slot="x")
    return [
        StreamTarget(CHAT_EVENTS, "ingest", EVENTS_STREAM, INGEST_CONSUMER, event),
        StreamTarget(owner_events_subject(OWNER), "ingest", EVENTS_STREAM, INGEST_CONSUMER, event),
        StreamTarget(EXTRACT_JOBS, "extract", JOBS_STREAM, EXTRACT_CONSUMER, extract),
        StreamTarget(EMBED_JOBS, "embed", JOBS_STREAM, EMBED_CONSUMER, embed),
        StreamTarget(SLEEP_JOBS, "sleep", SLEEP_STREAM, SLEEP_CONSUMER, sleep),
    ]


ACTIVITY_EXAMPLE = Activity(owner=ACTIVITY_OWNER, at=WHEN, kind="api", session_id="s1")


def check_catalogue(examples: dict[str, Wire]) -> None:
    """Every RPC operation has an example of its own request type."""
    assert set(examples) == set(RPC_OPS), set(RPC_OPS) ^ set(examples)
    for name, example in examples.items():
        assert isinstance(example, RPC_OPS[name].request), name
